// The plain (uncompressed) KV cache: per layer, K and V rows for every position up to n_ctx.
#pragma once
#include <cstdint>
#include <vector>

namespace folio {

struct KvCache {
  int32_t n_ctx = 0;
  int64_t k_width = 0;  // n_kv · head_dim: one row per position
  int64_t v_width = 0;  // n_kv · head_dim_v
  std::vector<std::vector<float>> k;  // [layer][n_ctx · k_width]
  std::vector<std::vector<float>> v;  // [layer][n_ctx · v_width]

  void init(int n_layer, int32_t ctx, int64_t kw, int64_t vw) {
    n_ctx = ctx;
    k_width = kw;
    v_width = vw;
    k.assign(size_t(n_layer), std::vector<float>(size_t(ctx) * size_t(kw)));
    v.assign(size_t(n_layer), std::vector<float>(size_t(ctx) * size_t(vw)));
  }
  float* k_row(int layer, int32_t pos) { return k[size_t(layer)].data() + size_t(pos) * size_t(k_width); }
  float* v_row(int layer, int32_t pos) { return v[size_t(layer)].data() + size_t(pos) * size_t(v_width); }
  size_t bytes() const { return k.size() * size_t(n_ctx) * size_t(k_width + v_width) * sizeof(float); }
};

}  // namespace folio
