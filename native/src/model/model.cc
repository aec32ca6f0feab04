#include "model/model.h"

#include <algorithm>

#include "core/error.h"
#include "core/hash.h"
#include "core/memory-info.h"
#include "gguf/metadata-rules.h"

namespace folio {

std::unique_ptr<Model> Model::load(const std::string& path) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = gguf::File::open(path);
  // Every key the engine reads is checked (its type, and a hyperparameter's range) before any is read, so a
  // wrong one is refused here with its name, never met later by code (such as info()) that assumes it.
  gguf::check_metadata(*m->file_, supported_architecture(*m->file_));
  m->hp_ = read_hparams(*m->file_);
  m->w_ = bind_weights(*m->file_, m->hp_);
  m->vocab_ = Vocab::from_gguf(*m->file_);
  if (m->vocab_->n_tokens() > m->hp_.n_vocab)
    fail("MODEL_BAD_TENSOR", strfmt("%s: the tokenizer has %d tokens but token_embd.weight only %d rows", path.c_str(),
                                    m->vocab_->n_tokens(), m->hp_.n_vocab));
  Hash64 h;
  h.update_value(m->file_->file_size());
  h.update(m->file_->base(), m->file_->data_offset());
  for (const auto& t : m->file_->tensors()) {
    const size_t n = std::min<size_t>(t.n_bytes, 256);
    h.update(t.data, n);
    h.update(t.data + t.n_bytes - n, n);
  }
  m->fingerprint_ = h.digest();
  return m;
}

const ModelWeights& Model::cpu_weights(ThreadPool& pool) const {
  std::call_once(cpu_once_, [&] {
    // Copies up to half the machine's memory (weights.h: repack_for_cpu); a failed attempt keeps nothing.
    const uint64_t ram = physical_memory_bytes();
    try {
      cpu_w_ = repack_for_cpu(w_, *file_, quant::best_isa(), pool, cpu_storage_, ram ? ram / 2 : 0);
    } catch (...) {
      cpu_storage_.clear();
      throw;
    }
  });
  return cpu_w_;
}

int64_t Model::n_params() const {
  int64_t n = 0;
  for (const auto& t : file_->tensors()) n += t.n_elements;
  return n;
}

}  // namespace folio
