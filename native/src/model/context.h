// An inference context over a model: the KV cache, working buffers and the forward pass.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "backend/cpu-ops.h"
#include "core/thread-pool.h"
#include "model/kv-cache.h"
#include "model/model.h"

namespace folio {

struct ContextParams {
  int32_t n_ctx = 0;      // 0: the model's training context, capped at 4096
  int32_t n_batch = 512;  // tokens per forward step of a prefill
  int n_threads = 0;      // 0: all hardware threads
};

// Called after each forward step of a prefill with (tokens done, tokens total).
using ProgressFn = std::function<void(int64_t done, int64_t total)>;

class Context {
 public:
  Context(const Model& model, const ContextParams& params);

  int32_t n_ctx() const { return cache_.n_ctx; }
  int32_t n_past() const { return n_past_; }
  int n_threads() const { return pool_.size(); }
  size_t kv_bytes() const { return cache_.bytes(); }

  // Runs `tokens` at positions n_past, n_past+1, ... and appends them to the cache. Writes the logits of
  // every position ([n, n_vocab]) when all_logits, else of the last one ([n_vocab]).
  // Throws CONTEXT_FULL when they do not fit, INVALID_TOKEN for an id outside the vocabulary, CANCELLED
  // when *cancel becomes true (checked between layers); the cache is then rolled back to where it was.
  void eval(const std::vector<int32_t>& tokens, bool all_logits, std::vector<float>& logits,
            const ProgressFn& progress = nullptr, const std::atomic<bool>* cancel = nullptr);

  // Forgets every position from n onwards (regenerate, edit).
  void truncate(int32_t n);

 private:
  void forward(const int32_t* tokens, int64_t n, bool all_logits, float* logits, const std::atomic<bool>* cancel);
  void reserve(int64_t n);

  const Model& model_;
  ContextParams params_;
  ThreadPool pool_;
  KvCache cache_;
  int32_t n_past_ = 0;
  cpu::Scratch scratch_;
  // Activations of one forward step, [n_batch, width] each.
  std::vector<float> x_, xb_, q_, k_, v_, att_, ffa_, ffb_, out_;
  std::vector<int32_t> pos_;
};

}  // namespace folio
