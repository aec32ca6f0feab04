// The compute backend interface: the operations one forward pass (forward/forward.h) and the compression
// of a prefill need, on activations that live in the backend's memory. A small, typed op table in the
// manner of ggml-backend: the CPU backend (backend/cpu-backend.h) runs the engine's kernels, the GPU
// backend (backend/gpu-backend.h) queues the operations of the C table in backend/gpu-abi.h.
//
// Pointers the operations take are the backend's memory (alloc) unless named *_host. Activations are
// row-major float32, [n tokens, width]; weights are in their GGUF types (quant/weight.h). Operations may
// run asynchronously; download and synchronize wait for them. Failures throw folio::Error.
//
// Cancellation is the caller's: the forward pass checks its flag between operations (forward/control.h)
// and throws. A backend that is handed the flag (set_stop) may also cut a long operation short once it is
// set; that operation's output is then garbage, and the caller throws it away.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "backend/kv-store.h"
#include "kv/flat-cache.h"
#include "quant/weight.h"

namespace folio::backend {

// Rotary position embedding: the angle of pair i is freq_scale · pos · base^(−2i/rope_dim) / freq_factors[i];
// the pair is multiplied by the rotation's cos and sin, each scaled by mscale (ggml's attn_factor: LongRoPE
// scales the rotated dims, and only those, by it).
struct RopeParams {
  int32_t rope_dim = 0;  // leading dims of each head that rotate
  bool neox = false;     // false: pairs (2i, 2i+1); true: pairs (i, i + rope_dim/2)
  float base = 10000.0f;
  float freq_scale = 1.0f;
  float mscale = 1.0f;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;  // "cpu", "cuda"
  // True when the backend's memory is the host's: its pointers can be read and written directly.
  virtual bool host_memory() const = 0;
  // The largest single allocation it makes (0: no limit below its memory). A weight larger than this comes
  // in parts (quant/weight.h: Weight::parts), which matmul and get_rows take.
  virtual size_t max_allocation() const { return 0; }

  // memory
  virtual void* alloc(size_t bytes) = 0;  // 64-byte aligned at least
  virtual void free(void* p) = 0;
  virtual void upload(void* dst, const void* src_host, size_t bytes) = 0;
  virtual void download(void* dst_host, const void* src, size_t bytes) = 0;  // waits for queued work
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void synchronize() = 0;

  // A flag that, once set, lets long operations skip their remaining work (see above).
  void set_stop(const std::atomic<bool>* stop) { stop_ = stop; }

  // y[t, r] = Σ_c W[r, c] · x[t, c]          W: [rows, cols]; x: [n, cols]; y: [n, rows].
  virtual void matmul(const Weight& W, const float* x, int64_t n, float* y) = 0;
  // y_i = W_i · x for several matrices and one input (q, k and v; gate and up): matmul for each in turn,
  // where a backend may prepare x once for all of them (the CPU converts it to 8-bit blocks once).
  struct Product {
    const Weight* W;
    float* y;
  };
  virtual void matmuls(const float* x, int64_t n, std::initializer_list<Product> products) {
    for (const Product& p : products) matmul(*p.W, x, n, p.y);
  }
  // out[t, :] = row ids[t] of W, as floats     ids: [n]; out: [n, cols].
  virtual void get_rows(const Weight& W, const int32_t* ids, int64_t n, float* out) = 0;
  // y[t, :] = x[t, :] / rms(x[t, :]) · g       x, y: [n, width] (may alias); g: [width].
  virtual void rms_norm(const float* x, const float* g, float* y, int64_t n, int64_t width, float eps) = 0;
  // Rotates the first rope_dim dims of every head in place. x: [n, n_heads·head_dim]; pos: [n];
  // freq_factors: [rope_dim/2] divisors or null.
  virtual void rope(float* x, int64_t n, int n_heads, int head_dim, const int32_t* pos, const RopeParams& p,
                    const float* freq_factors) = 0;
  // h = silu(g) · u                            g, u, h: [n, width]; h may alias g.
  virtual void swiglu(const float* g, const float* u, float* h, int64_t n, int64_t width) = 0;
  // h = gelu(g) · u, GELU's tanh form         g, u, h: [n, width]; h may alias g.
  virtual void geglu(const float* g, const float* u, float* h, int64_t n, int64_t width) = 0;
  // x += y                                     x, y: [count].
  virtual void add(float* x, const float* y, int64_t count) = 0;
  // x *= s                                     x: [count].
  virtual void scale(float* x, float s, int64_t count) = 0;
  // x[t, :] += b                               x: [n, width]; b: [width].
  virtual void add_bias(float* x, const float* b, int64_t n, int64_t width) = 0;

  // KV stores in this backend's memory: empty, or a copy of a host cache.
  virtual std::unique_ptr<KvStore> make_kv_store(int n_layer, int n_head_kv, int head_dim, int head_dim_v,
                                                 KvFormat format) = 0;
  virtual std::unique_ptr<KvStore> kv_store_from_host(FlatKvCache cache) = 0;

  // Causal attention of the m newest tokens over layer l, whose heads all end with their m entries: query
  // t of head h reads KV head g = h / (n_head / Hk), entries [0, len_g − m + t]; with n_swa > 0 only those
  // in its sliding window (backend/sliding-window.h), by the entries' positions.
  // q: [m, n_head·head_dim]; out: [m, n_head·head_dim_v].
  virtual void attention(const float* q, const KvStore& kv, int l, int64_t m, int n_head, int32_t n_swa,
                         float* out) = 0;
  // SnapKV window scores (kv/scorer.h) of layer l: head g's first lens_host[g] entries, the last w of them
  // the window (the heads differ in length while a long document is read in chunks). qw [w, n_head·head_dim];
  // with M = max_g lens_host[g]: attn [Hk, M] the window-mean attention, score [Hk, M − w] it max-pooled,
  // row g filled up to its own length.
  virtual void window_scores(const float* qw, const KvStore& kv, int l, int n_head, const int32_t* lens_host, int32_t w,
                             int kernel, float* attn, float* score) = 0;
  // How an attention watch folds the softmax probabilities its queries give each watched entry.
  enum class Fold {
    Max,  // the largest any query gives it: KVzip's re-reading (kv/scorers/kvzip.cc), a question scoring turns
    Sum,  // the sum over the queries and their heads: the attention an answer paid the document (citations)
  };
  // The m newest queries q [m, n_head·head_dim] of layer l, whose m entries are the last of every head (query
  // t of head g sees entries [0, len_g − m + t]), watching the first acc[g].size() entries of each head: folds
  // into acc[g][j] the softmax probability each of the head's G·m queries gives entry j (raised to the largest,
  // or added). The default computes it on the host from read_k: the reference the CPU's vectorised kernel is
  // tested against, and what a backend without a kernel of its own runs.
  virtual void watch_attention(const float* q, const KvStore& kv, int l, int64_t m, int n_head, int head_dim, Fold fold,
                               std::vector<std::vector<float>>& acc);

 protected:
  const std::atomic<bool>* stop_ = nullptr;
};

// An allocation of a backend, freed when it goes out of scope (move-only).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend& be, size_t bytes) : be_(&be), p_(be.alloc(bytes)), bytes_(bytes) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept : be_(o.be_), p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      be_ = o.be_;
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void reset() {
    if (p_) be_->free(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  // Grows to at least `bytes` (the contents are not kept).
  void ensure(Backend& be, size_t bytes) {
    if (bytes_ < bytes || !p_) *this = Buffer(be, bytes ? bytes : 1);
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  Backend* be_ = nullptr;
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace folio::backend
