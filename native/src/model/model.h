// A loaded model: the mapped GGUF file, its hyperparameters, weights and tokenizer.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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
  // The tensors as the file has them (the GPU backend uploads these).
  const ModelWeights& weights() const { return w_; }
  // The tensors as the CPU kernels want them (repack_for_cpu): made by the first forward pass on the CPU,
  // with its context's threads, then shared by every context. That first pass takes longer: the 1B
  // Q4_K_M model, two cores, 0.2 s with AVX-512 (its Q4_K matrices), 0.4 s with AVX2 (Q4_K and Q6_K),
  // about half of it the OS zeroing the new pages.
  const ModelWeights& cpu_weights(ThreadPool& pool) const;
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
  mutable std::once_flag cpu_once_;
  mutable ModelWeights cpu_w_;
  mutable std::vector<LargeBuffer> cpu_storage_;
};

}  // namespace folio
