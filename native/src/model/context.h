// An inference context over a model: the flat KV cache, working buffers and the forward pass.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "backend/cpu-ops.h"
#include "core/thread-pool.h"
#include "kv/flat-cache.h"
#include "kv/method.h"
#include "kv/stats.h"
#include "model/model.h"

namespace folio {

namespace kv {
class Compressor;
}

// Where the forward pass runs. The CUDA backend needs libfolio-cuda and a device (backend/gpu-loader.h).
enum class Backend { Cpu, Cuda };
const char* backend_name(Backend b);

struct ContextParams {
  int32_t n_ctx = 0;                // positions the context can hold; 0: the model's, capped at 4096
  int32_t n_batch = 512;            // tokens per step of a prefill
  int n_threads = 0;                // 0: all hardware threads
  KvType kv_type = KvType::F16;     // element type of the cached keys and values
  bool reference_attention = false; // use the slow reference attention (tests; CPU only)
  Backend backend = Backend::Cpu;
};

// Called during a prefill with (tokens done, tokens total).
using ProgressFn = std::function<void(int64_t done, int64_t total)>;

class Context {
 public:
  Context(const Model& model, const ContextParams& params);
  // A copy with the same cache contents (a chat forked from a compressed document).
  std::unique_ptr<Context> fork() const;

  const Model& model() const { return model_; }
  const ContextParams& params() const { return params_; }
  int32_t n_ctx() const { return params_.n_ctx; }
  // The position the next token takes. After compression the heads hold fewer entries than this; new
  // tokens still continue the prefix's positions.
  int32_t n_past() const { return n_past_; }
  int n_threads() const { return pool_.size(); }
  Backend backend() const { return params_.backend; }
  // The cache (on the GPU backend, a host copy made when asked for).
  const FlatKvCache& cache() const;
  // Replaces the cache (loading a saved session); n_past is the next position.
  void restore(FlatKvCache cache, int32_t n_past);

  // Runs `tokens` at positions n_past, n_past + 1, ... and appends them to the cache. Writes the logits of
  // every position ([n, n_vocab]) when all_logits, else of the last one ([n_vocab]).
  // Throws CONTEXT_FULL when they do not fit, INVALID_TOKEN for an id outside the vocabulary, CANCELLED
  // when *cancel becomes true; the cache is then rolled back to where it was.
  void eval(const std::vector<int32_t>& tokens, bool all_logits, std::vector<float>& logits,
            const ProgressFn& progress = nullptr, const std::atomic<bool>* cancel = nullptr);

  // Prefills `tokens` into an empty context and compresses the cache layer by layer as it goes
  // (ADAKV.md). Writes the last position's logits. Throws NOT_EMPTY when the context holds tokens.
  kv::CompressionStats compress(const std::vector<int32_t>& tokens, const kv::CompressOptions& opts,
                                std::vector<float>& logits, const ProgressFn& progress = nullptr,
                                const std::atomic<bool>* cancel = nullptr);

  // Forgets every position from n onwards (regenerate, edit).
  void truncate(int32_t n);

 private:
  void check_tokens(const std::vector<int32_t>& tokens) const;
  void forward(const int32_t* tokens, int64_t n, bool all_logits, float* logits, const ProgressFn& progress,
               const std::atomic<bool>* cancel, kv::Compressor* comp);
  void reserve(int64_t n_tokens, int64_t chunk);
  // The same forward pass on the GPU (model/context-gpu.cc).
  struct Gpu;
  void forward_gpu(const int32_t* tokens, int64_t n, bool all_logits, float* logits, const ProgressFn& progress,
                   const std::atomic<bool>* cancel, kv::Compressor* comp);
  void compress_layer_gpu(kv::Compressor* comp, int l, const float* qwin, int32_t spare);
  void gpu_init();
  void gpu_copy_from(const Context& other);
  void gpu_restore();  // uploads cache_
  void gpu_truncate(int32_t n);

  const Model& model_;
  ContextParams params_;
  ThreadPool pool_;
  mutable FlatKvCache cache_;  // on the GPU backend: the host copy, refreshed by cache() when stale
  struct GpuDeleter {
    void operator()(Gpu* g) const;  // where Gpu is complete
  };
  std::unique_ptr<Gpu, GpuDeleter> gpu_;
  mutable bool host_stale_ = false;
  int32_t n_past_ = 0;
  cpu::Scratch scratch_;
  std::vector<float> x_;  // [n, n_embd] the residual stream of every token of the call
  // Activations of one chunk, [n_batch, width] each.
  std::vector<float> xb_, q_, k_, v_, att_, ffa_, ffb_;
  std::vector<int32_t> pos_;
};

}  // namespace folio
