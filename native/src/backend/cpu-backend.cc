#include "backend/cpu-backend.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "kv/scorer.h"
#include "quant/quant.h"

namespace folio::backend {

namespace {

// The flat cache is the CPU's store: no copies.
class CpuKvStore final : public KvStore {
 public:
  explicit CpuKvStore(FlatKvCache c) : c_(std::move(c)) {}
  const FlatKvCache& cache() const { return c_; }

  int n_layer() const override { return c_.n_layer(); }
  int n_head_kv() const override { return c_.n_head_kv(); }
  KvFormat format() const override { return c_.format(); }
  size_t k_entry_bytes() const override { return c_.k_entry_bytes(); }
  size_t v_entry_bytes() const override { return c_.v_entry_bytes(); }
  int32_t len(int l, int h) const override { return c_.len(l, h); }
  void reserve(int l, int32_t n, int32_t slack) override { c_.reserve(l, n, slack); }
  void append(int l, const float* k, const float* v, const int32_t*, const int32_t* pos_host, int32_t n) override {
    c_.append(l, k, v, pos_host, n);
  }
  void compact(int l, const std::vector<std::vector<int32_t>>& keep, int32_t spare) override {
    c_.compact(l, keep, spare);
  }
  void truncate(int32_t p) override { c_.truncate(p); }
  void read_k(int l, int h, int32_t n, float* out) const override { c_.read_k(l, h, 0, n, out); }
  void read_v(int l, int h, int32_t n, float* out) const override { c_.read_v(l, h, 0, n, out); }
  void read_pos(int l, int h, int32_t n, int32_t* out) const override {
    std::memcpy(out, c_.layer(l).positions(h), size_t(n) * 4);
  }
  void rewrite_keys(int l, int h, int32_t n, const float* k, const int32_t* pos) override {
    c_.rewrite_keys(l, h, n, k, pos);
  }
  size_t bytes_reserved() const override { return c_.bytes_reserved(); }
  std::unique_ptr<KvStore> clone() const override { return std::make_unique<CpuKvStore>(c_.clone()); }
  FlatKvCache to_host() const override { return c_.clone(); }
  const FlatKvCache* host() const override { return &c_; }
  FlatKvCache release_host() override { return std::move(c_); }

 private:
  FlatKvCache c_;
};

const FlatKvCache& flat(const KvStore& kv) {
  const FlatKvCache* c = kv.host();
  if (!c) fail("INTERNAL", "the CPU backend was given another backend's KV store");
  return *c;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(ThreadPool& pool, bool reference_attention) : pool_(pool), reference_attention_(reference_attention) {}

  const char* name() const override { return "cpu"; }
  bool host_memory() const override { return true; }

  void* alloc(size_t bytes) override {
    void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
    if (!p) fail("OUT_OF_MEMORY", strfmt("cannot allocate %zu bytes", bytes));
    return p;
  }
  void free(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes && dst != src) std::memmove(dst, src, bytes);
  }
  void synchronize() override {}

  void matmul(const Weight& W, const float* x, int64_t n, float* y) override {
    cpu::matmul(pool_, scratch_, W, x, n, y, stop_);
  }
  void matmuls(const float* x, int64_t n, std::initializer_list<Product> products) override {
    cpu::matmuls(pool_, scratch_, x, n, products, stop_);
  }
  void get_rows(const Weight& W, const int32_t* ids, int64_t n, float* out) override {
    const quant::Kernels& k = quant::kernels(W.type);
    pool_.parallel_for(n, [&](int64_t t, int) { k.dequantize_row(W.row(ids[t]), out + t * W.cols, W.cols); });
  }
  void rms_norm(const float* x, const float* g, float* y, int64_t n, int64_t width, float eps) override {
    cpu::rms_norm(pool_, x, g, y, n, width, eps);
  }
  void rope(float* x, int64_t n, int n_heads, int head_dim, const int32_t* pos, const RopeParams& p,
            const float* freq_factors) override {
    cpu::rope(pool_, x, n, n_heads, head_dim, pos, p, freq_factors);
  }
  void swiglu(const float* g, const float* u, float* h, int64_t n, int64_t width) override {
    cpu::swiglu(pool_, g, u, h, n, width);
  }
  void geglu(const float* g, const float* u, float* h, int64_t n, int64_t width) override {
    cpu::geglu(pool_, g, u, h, n, width);
  }
  void add(float* x, const float* y, int64_t count) override {
    for (int64_t i = 0; i < count; i++) x[i] += y[i];
  }
  void scale(float* x, float s, int64_t count) override { cpu::scale(x, s, count); }
  void add_bias(float* x, const float* b, int64_t n, int64_t width) override { cpu::add_bias(x, b, n, width); }

  std::unique_ptr<KvStore> make_kv_store(int n_layer, int n_head_kv, int head_dim, int head_dim_v,
                                         KvFormat format) override {
    return std::make_unique<CpuKvStore>(FlatKvCache(n_layer, n_head_kv, head_dim, head_dim_v, format));
  }
  std::unique_ptr<KvStore> kv_store_from_host(FlatKvCache cache) override {
    return std::make_unique<CpuKvStore>(std::move(cache));
  }

  void attention(const float* q, const KvStore& kv, int l, int64_t m, int n_head, int32_t n_swa, float* out) override {
    if (reference_attention_) cpu::attention_reference(pool_, scratch_, q, flat(kv), l, m, n_head, n_swa, out);
    else cpu::attention(pool_, scratch_, q, flat(kv), l, m, n_head, n_swa, out, stop_);
  }
  void window_scores(const float* qw, const KvStore& kv, int l, int n_head, const int32_t* lens_host, int32_t w,
                     int kernel, float* attn, float* score) override {
    const FlatKvCache& c = flat(kv);
    if (reference_attention_) return window_scores_reference(qw, c, l, n_head, lens_host, w, kernel, attn, score);
    // The window's w queries watch their heads as the newest w entries: the summed probabilities over the
    // w·G rows, in float (the reference sums in double: backend-ops holds the two within NMSE 1e-9).
    const int Hk = c.n_head_kv();
    std::vector<std::vector<float>> acc(static_cast<size_t>(Hk));
    int32_t M = 0;
    for (int g = 0; g < Hk; g++) {
      acc[size_t(g)].assign(size_t(lens_host[g]), 0.0f);
      M = std::max(M, lens_host[g]);
    }
    cpu::watch_attention(pool_, scratch_, qw, c, l, w, n_head, Fold::Sum, acc, lens_host);
    const float norm = float(1.0 / (double(n_head / Hk) * double(w)));  // mean over the window and the group
    for (int g = 0; g < Hk; g++) {
      std::vector<float>& a = acc[size_t(g)];
      for (float& x : a) x *= norm;
      std::memcpy(attn + int64_t(g) * M, a.data(), a.size() * sizeof(float));
      const std::vector<float> pooled = kv::max_pool(std::vector<float>(a.begin(), a.end() - w), kernel);
      std::memcpy(score + int64_t(g) * (M - w), pooled.data(), pooled.size() * sizeof(float));
    }
  }
  // kv::snapkv_scores itself: the slow, obviously correct scorer.
  void window_scores_reference(const float* qw, const FlatKvCache& c, int l, int n_head, const int32_t* lens_host,
                               int32_t w, int kernel, float* attn, float* score) {
    kv::WindowShape s;
    s.n_head = n_head, s.n_head_kv = c.n_head_kv(), s.head_dim = c.head_dim(), s.head_dim_v = c.head_dim_v();
    s.lens.assign(lens_host, lens_host + s.n_head_kv);
    s.L = s.max_len(), s.w = w;
    const kv::EntryReader keys = [&](int g, float* out) { c.read_k(l, g, 0, s.len(g), out); };
    const kv::WindowScores ws = kv::snapkv_scores(pool_, s, qw, keys, kernel);
    for (int g = 0; g < s.n_head_kv; g++) {
      std::memcpy(attn + int64_t(g) * s.L, ws.attn[size_t(g)].data(), size_t(s.len(g)) * sizeof(float));
      std::memcpy(score + int64_t(g) * (s.L - w), ws.score[size_t(g)].data(), size_t(s.len(g) - w) * sizeof(float));
    }
  }
  void watch_attention(const float* q, const KvStore& kv, int l, int64_t m, int n_head, int, Fold fold,
                       std::vector<std::vector<float>>& acc) override {
    cpu::watch_attention(pool_, scratch_, q, flat(kv), l, m, n_head, fold, acc);
  }

 private:
  ThreadPool& pool_;
  cpu::Scratch scratch_;
  bool reference_attention_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(ThreadPool& pool, bool reference_attention) {
  return std::make_unique<CpuBackend>(pool, reference_attention);
}

}  // namespace folio::backend
