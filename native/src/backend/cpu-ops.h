// The CPU kernels of the backend operations (backend/backend.h; the CPU backend, backend/cpu-backend.h,
// calls them). Each works on row-major float activations ([n tokens, width] unless stated) and splits its
// work over the thread pool.
#pragma once
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/thread-pool.h"
#include "kv/flat-cache.h"
#include "backend/backend.h"
#include "quant/weight.h"

namespace folio::cpu {

// Per-thread and per-call working memory, grown on demand and reused across calls.
// Per-thread buffers are grown by reserve() before a parallel region and only read inside it: growing the
// outer vector from a worker would move the other threads' buffers under them.
struct Scratch {
  std::vector<uint8_t> act;                    // activations converted to a weight's vec_dot_type
  std::vector<std::vector<float>> per_thread;  // e.g. attention score rows
  void reserve(int threads, size_t n);         // every thread's buffer holds at least n floats
  float* thread_buffer(int thread) { return per_thread[size_t(thread)].data(); }
};

// y[t, :] = x[t, :] / rms(x[t, :]) * g     x, y: [n, width]; g: [width]; y may alias x.
void rms_norm(ThreadPool& pool, const float* x, const float* g, float* y, int64_t n, int64_t width, float eps);

// Y[t, r] = Σ_c W[r, c] · X[t, c]          W: [rows, cols]; X: [n, cols]; Y: [n, rows].
// X is first converted to the weight type's vec_dot_type (8-bit blocks for quantized weights, F16 for F16).
// `stop` (optional): set to cancel; the remaining blocks are skipped and the output must be discarded.
void matmul(ThreadPool& pool, Scratch& s, const Weight& W, const float* X, int64_t n, float* Y,
            const std::atomic<bool>* stop = nullptr);

// Y_i = W_i · X for each (W_i, Y_i) of `products`, X converted once for all products whose weights
// take the same activation format (cpu-backend's Backend::matmuls).
void matmuls(ThreadPool& pool, Scratch& s, const float* X, int64_t n,
             std::initializer_list<backend::Backend::Product> products, const std::atomic<bool>* stop = nullptr);

// x[t, :] += b                              x: [n, width]; b: [width].
void add_bias(float* x, const float* b, int64_t n, int64_t width);

// Rotary position embedding of the first rope_dim dims of every head, in place.
// x: [n, n_heads · head_dim]; pos: [n] absolute positions; freq_factors: [rope_dim/2] divisors or null.
void rope(ThreadPool& pool, float* x, int64_t n, int n_heads, int head_dim, const int32_t* pos,
          const backend::RopeParams& p, const float* freq_factors);

// h[t, :] = silu(g[t, :]) · u[t, :]         g, u, h: [n, width]; h may alias g.
void swiglu(ThreadPool& pool, const float* g, const float* u, float* h, int64_t n, int64_t width);

// GELU in its tanh form (Gemma's gelu_pytorch_tanh, ggml's gelu): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
float gelu_tanh(float x);
// h[t, :] = gelu_tanh(g[t, :]) · u[t, :]    g, u, h: [n, width]; h may alias g.
void geglu(ThreadPool& pool, const float* g, const float* u, float* h, int64_t n, int64_t width);

// x[i] *= s                                 x: [count].
void scale(float* x, float s, int64_t count);

// Attention of the m newest tokens over layer l of the flat cache, whose heads all end with those m
// tokens' entries: query t (0 <= t < m) of KV head g sees the head's entries [0, len_g − m + t + 1), of
// those only the ones in its sliding window where n_swa > 0 (backend/sliding-window.h: by the entries'
// positions, the query's being its own entry's).
// q: [m, n_head · head_dim]; out: [m, n_head · head_dim_v]. Query head h reads KV head h / (H / Hk); the
// other dimensions are the cache's.
// `attention` walks the keys in blocks with an online softmax, a tile of queries and all G query heads
// of a KV head at once; `attention_reference` is the slow, obviously correct two-pass version it is
// tested against.
void attention(ThreadPool& pool, Scratch& s, const float* q, const FlatKvCache& cache, int l, int64_t m, int n_head,
               int32_t n_swa, float* out, const std::atomic<bool>* stop = nullptr);
void attention_reference(ThreadPool& pool, Scratch& s, const float* q, const FlatKvCache& cache, int l, int64_t m,
                         int n_head, int32_t n_swa, float* out);

// Backend::watch_attention (backend/backend.h) over the flat cache, vectorised over the keys; the backend's
// default, on the host, is the reference it is tested against (native/tests/scorers-selftest.cc). With lens,
// head g is taken to end at entry lens[g] (at most its length in the cache) instead of at its last: the
// window scores' ragged heads (Backend::window_scores, tested against kv::snapkv_scores by backend-ops).
void watch_attention(ThreadPool& pool, Scratch& s, const float* q, const FlatKvCache& cache, int l, int64_t m,
                     int n_head, backend::Backend::Fold fold, std::vector<std::vector<float>>& acc,
                     const int32_t* lens = nullptr);

}  // namespace folio::cpu
