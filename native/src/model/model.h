// A loaded model: the mapped GGUF file, its hyperparameters, weights and tokenizer.
#pragma once
#include <memory>
#include <string>

#include "gguf/gguf.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "tokenizer/vocab.h"

namespace folio {

class Model {
 public:
  // Maps the file and checks everything before any compute. Throws folio::Error.
  static std::unique_ptr<Model> load(const std::string& path);

  const gguf::File& file() const { return *file_; }
  const HParams& hparams() const { return hp_; }
  const ModelWeights& weights() const { return w_; }
  const Vocab& vocab() const { return *vocab_; }
  int64_t n_params() const;
  // Identifies the model file: its size, header (metadata and tensor table) and samples of every
  // tensor's data. Saved sessions are tied to it.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  std::unique_ptr<gguf::File> file_;
  HParams hp_;
  ModelWeights w_;
  std::unique_ptr<Vocab> vocab_;
  uint64_t fingerprint_ = 0;
};

}  // namespace folio
