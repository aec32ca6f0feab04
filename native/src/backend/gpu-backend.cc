#include "backend/gpu-backend.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "backend/gpu-kv-cache.h"
#include "backend/gpu-loader.h"
#include "core/error.h"

namespace folio::backend {

namespace {

class GpuKvStore final : public KvStore {
 public:
  explicit GpuKvStore(gpu::KvCache c) : c_(std::move(c)) {}
  const gpu::KvCache& cache() const { return c_; }

  int n_layer() const override { return c_.n_layer(); }
  int n_head_kv() const override { return c_.n_head_kv(); }
  KvFormat format() const override { return c_.format(); }
  size_t k_entry_bytes() const override { return c_.k_entry_bytes(); }
  size_t v_entry_bytes() const override { return c_.v_entry_bytes(); }
  int32_t len(int l, int h) const override { return c_.len(l, h); }
  void reserve(int l, int32_t n, int32_t slack) override { c_.reserve(l, n, slack); }
  void append(int l, const float* k, const float* v, const int32_t* pos, const int32_t* pos_host, int32_t n) override {
    c_.append(l, k, v, pos, pos_host, n);
  }
  void compact(int l, const std::vector<std::vector<int32_t>>& keep, int32_t spare) override {
    c_.compact(l, keep, spare);
  }
  void truncate(int32_t p) override { c_.truncate(p); }
  void read_k(int l, int h, int32_t n, float* out) const override { c_.read_k(l, h, n, out); }
  void read_v(int l, int h, int32_t n, float* out) const override { c_.read_v(l, h, n, out); }
  void read_pos(int l, int h, int32_t n, int32_t* out) const override { c_.read_pos(l, h, n, out); }
  void rewrite_keys(int l, int h, int32_t n, const float* k, const int32_t* pos) override {
    c_.rewrite_keys(l, h, n, k, pos);
  }
  size_t bytes_reserved() const override { return c_.bytes_reserved(); }
  std::unique_ptr<KvStore> clone() const override { return std::make_unique<GpuKvStore>(c_.clone()); }
  FlatKvCache to_host() const override { return c_.to_host(); }

 private:
  gpu::KvCache c_;
};

const gpu::KvCache& device(const KvStore& kv) {
  const auto* s = dynamic_cast<const GpuKvStore*>(&kv);
  if (!s) fail("INTERNAL", "the GPU backend was given another backend's KV store");
  return s->cache();
}

class GpuBackend final : public Backend {
 public:
  explicit GpuBackend(const gpu::Status& st) : api_(*st.api), max_alloc_(st.device.max_alloc_bytes) {}

  const char* name() const override { return api_.backend; }
  bool host_memory() const override { return false; }
  size_t max_allocation() const override { return size_t(max_alloc_); }

  void* alloc(size_t bytes) override {
    void* p = nullptr;
    run(op(api_.alloc, "alloc")(bytes ? bytes : 1, &p), "GPU allocation");
    return p;
  }
  void free(void* p) override { op(api_.free, "free")(p); }
  void upload(void* dst, const void* src, size_t bytes) override {
    run(op(api_.upload, "upload")(dst, src, bytes), "GPU upload");
  }
  void download(void* dst, const void* src, size_t bytes) override {
    run(op(api_.download, "download")(dst, src, bytes), "GPU download");
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    run(op(api_.copy, "copy")(dst, src, bytes), "GPU copy");
  }
  void synchronize() override { run(op(api_.synchronize, "synchronize")(), "GPU forward"); }

  void matmul(const Weight& W, const float* x, int64_t n, float* y) override {
    if (W.parts) return matmul_parts(W, x, n, y);
    run(op(api_.matmul, "matmul")(W.data, int32_t(W.type), W.rows, W.cols, W.row_bytes, x, n, y), "GPU matmul");
  }
  void get_rows(const Weight& W, const int32_t* ids, int64_t n, float* out) override {
    if (W.parts) return get_rows_parts(W, ids, n, out);
    run(op(api_.get_rows, "get_rows")(W.data, int32_t(W.type), W.cols, W.row_bytes, ids, n, out), "GPU embedding");
  }
  void rms_norm(const float* x, const float* g, float* y, int64_t n, int64_t width, float eps) override {
    run(op(api_.rms_norm, "rms_norm")(x, g, y, n, width, eps), "GPU rms_norm");
  }
  void rope(float* x, int64_t n, int n_heads, int head_dim, const int32_t* pos, const RopeParams& p,
            const float* freq_factors) override {
    const folio_gpu_rope r{p.rope_dim, p.neox ? 1 : 0, p.base, p.freq_scale, p.mscale};
    run(op(api_.rope, "rope")(x, n, n_heads, head_dim, pos, &r, freq_factors), "GPU rope");
  }
  void swiglu(const float* g, const float* u, float* h, int64_t n, int64_t width) override {
    run(op(api_.swiglu, "swiglu")(g, u, h, n * width), "GPU swiglu");
  }
  void geglu(const float* g, const float* u, float* h, int64_t n, int64_t width) override {
    run(op(api_.geglu, "geglu")(g, u, h, n * width), "GPU geglu");
  }
  void add(float* x, const float* y, int64_t count) override { run(op(api_.add, "add")(x, y, count), "GPU add"); }
  void scale(float* x, float s, int64_t count) override { run(op(api_.scale, "scale")(x, s, count), "GPU scale"); }
  void add_bias(float* x, const float* b, int64_t n, int64_t width) override {
    run(op(api_.add_bias, "add_bias")(x, b, n, width), "GPU bias");
  }

  std::unique_ptr<KvStore> make_kv_store(int n_layer, int n_head_kv, int head_dim, int head_dim_v,
                                         KvFormat format) override {
    return std::make_unique<GpuKvStore>(gpu::KvCache(api_, n_layer, n_head_kv, head_dim, head_dim_v, format));
  }
  std::unique_ptr<KvStore> kv_store_from_host(FlatKvCache cache) override {
    return std::make_unique<GpuKvStore>(gpu::KvCache::from_host(api_, cache));
  }

  // Over rotated entries (a quantized cache, kv/hadamard.h) the queries are rotated as the keys were, and the
  // output, made of rotated values, is rotated back: the products are the model's.
  void attention(const float* q, const KvStore& kv, int l, int64_t m, int n_head, int32_t n_swa, float* out) override {
    const gpu::KvCache& c = device(kv);
    const folio_gpu_kv_layer layer = c.layer(l);
    q = c.rotated_queries(q, m * n_head);
    run(op(api_.attention, "attention")(q, &layer, int32_t(m), n_head, n_swa, out), "GPU attention");
    if (c.format().rotate_v()) gpu::rotate_rows(api_, out, m * n_head, c.head_dim_v());
  }
  void window_scores(const float* qw, const KvStore& kv, int l, int n_head, const int32_t* lens_host, int32_t w,
                     int kernel, float* attn, float* score) override {
    const gpu::KvCache& c = device(kv);
    const folio_gpu_kv_layer layer = c.layer(l);
    const int Hk = layer.n_head_kv;
    qw = c.rotated_queries(qw, int64_t(w) * n_head);  // the keys' basis (only the scores are made)
    const int32_t M = *std::max_element(lens_host, lens_host + Hk);
    if (std::all_of(lens_host, lens_host + Hk, [&](int32_t n) { return n == M; })) {
      run(op(api_.window_scores, "window_scores")(qw, &layer, n_head, M, w, kernel, attn, score), "GPU window scores");
      return;
    }
    // Heads of different lengths (a chunked read): the table's operation takes one length, so each KV head
    // is scored alone, as a layer of one head, with its query group's rows of the window gathered.
    const int G = n_head / Hk, D = layer.head_dim;
    Buffer group(*this, size_t(w) * size_t(G) * size_t(D) * sizeof(float));  // [w, G·head_dim]
    for (int g = 0; g < Hk; g++) {
      for (int32_t i = 0; i < w; i++)
        copy(group.as<float>() + int64_t(i) * G * D, qw + (int64_t(i) * n_head + int64_t(g) * G) * D,
             size_t(G) * size_t(D) * sizeof(float));
      folio_gpu_kv_layer one = layer;
      one.offset = layer.offset + g;
      one.len = layer.len + g;
      one.n_head_kv = 1;
      run(op(api_.window_scores, "window_scores")(group.as<float>(), &one, G, lens_host[g], w, kernel,
                                                  attn + int64_t(g) * M, score + int64_t(g) * (M - w)),
          "GPU window scores");
    }
    synchronize();  // `group` is freed here
  }

 private:
  void run(int rc, const char* what) const { gpu::check(api_, rc, what); }

  // A weight in parts (a device that allocates less than it at once): part p's products are columns
  // [row0, row0 + rows) of y, together for one token; for more they go through a scratch matrix and one
  // copy per token and part (rare: the output matrix of a large vocabulary, for every position's logits).
  void matmul_parts(const Weight& W, const float* x, int64_t n, float* y) {
    if (n == 1) {
      for (const WeightPart& p : *W.parts) matmul(W.part(p), x, 1, y + p.row0);
      return;
    }
    std::vector<Buffer> scratch;  // one per part: a part's copies may still be queued when the next part runs
    for (const WeightPart& p : *W.parts) {
      scratch.emplace_back(*this, size_t(n) * size_t(p.rows) * sizeof(float));  // [n, rows of the part]
      float* s = scratch.back().as<float>();
      matmul(W.part(p), x, n, s);
      for (int64_t t = 0; t < n; t++) copy(y + t * W.rows + p.row0, s + t * p.rows, size_t(p.rows) * sizeof(float));
    }
    synchronize();  // the scratch matrices are freed here
  }

  // The embedding rows of a weight in parts: the ids are read back, and each part gathers its own tokens'
  // rows, which are copied to their places.
  void get_rows_parts(const Weight& W, const int32_t* ids, int64_t n, float* out) {
    std::vector<int32_t> host(static_cast<size_t>(n));
    download(host.data(), ids, size_t(n) * sizeof(int32_t));
    Buffer local(*this, size_t(std::max<int64_t>(n, 1)) * sizeof(int32_t));                // [n] ids within their part
    Buffer rows(*this, size_t(std::max<int64_t>(n, 1)) * size_t(W.cols) * sizeof(float));  // [n, cols]
    int64_t done = 0;  // rows gathered so far: each part writes after the previous ones (nothing is reused)
    for (const WeightPart& p : *W.parts) {
      std::vector<int32_t> mine, where;
      for (int64_t t = 0; t < n; t++)
        if (host[size_t(t)] >= p.row0 && host[size_t(t)] < p.row0 + p.rows)
          mine.push_back(int32_t(host[size_t(t)] - p.row0)), where.push_back(int32_t(t));
      if (mine.empty()) continue;
      int32_t* part_ids = local.as<int32_t>() + done;
      float* part_rows = rows.as<float>() + done * W.cols;
      upload(part_ids, mine.data(), mine.size() * sizeof(int32_t));
      get_rows(W.part(p), part_ids, int64_t(mine.size()), part_rows);
      for (size_t i = 0; i < where.size(); i++)
        copy(out + int64_t(where[i]) * W.cols, part_rows + int64_t(i) * W.cols, size_t(W.cols) * sizeof(float));
      done += int64_t(mine.size());
    }
    if (done != n) fail("INVALID_ARGUMENT", "a token id outside the embedding matrix");
    synchronize();  // `local` and `rows` are freed here
  }
  // An entry of the table, or GPU_ERROR where the library lacks it (a partial backend under development).
  template <class F>
  static F op(F f, const char* name) {
    if (!f) fail("GPU_ERROR", strfmt("%s is missing from the GPU operation table", name));
    return f;
  }
  const folio_gpu_api& api_;
  uint64_t max_alloc_;  // the device's largest allocation (0: no limit below its memory)
};

}  // namespace

std::shared_ptr<Backend> gpu_backend(gpu::Kind kind) {
  static std::mutex mu;
  static std::map<gpu::Kind, std::shared_ptr<Backend>> the;
  const gpu::Status& st = gpu::status(kind);
  if (!st.available) fail("GPU_UNAVAILABLE", st.reason);
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<Backend>& b = the[kind];
  if (!b) b = std::make_shared<GpuBackend>(st);
  return b;
}

}  // namespace folio::backend
