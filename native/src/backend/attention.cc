// Attention over the flat variable-length KV cache: one sequence per KV head with its G query heads.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu-ops.h"

namespace folio::cpu {

namespace {

constexpr int32_t kKeyBlock = 64;     // keys converted to float per step
constexpr int64_t kQueryTile = 8;     // queries of one KV head handled together

}  // namespace

void attention(ThreadPool& pool, Scratch& s, const float* q, const FlatKvCache& cache, int l, int64_t m, float* out,
               const HParams& hp) {
  const int H = hp.n_head, Hk = hp.n_head_kv, G = hp.n_gqa(), D = hp.head_dim, Dv = hp.head_dim_v;
  const int64_t qw = hp.q_width(), ow = int64_t(H) * Dv;
  const float scale = 1.0f / std::sqrt(float(D));
  const int64_t tiles = (m + kQueryTile - 1) / kQueryTile;
  // Per thread: a block of keys, a block of values, and per (query, head) the running max, sum and output.
  const size_t rows = size_t(kQueryTile) * size_t(G);
  const size_t per_thread = size_t(kKeyBlock) * size_t(D + Dv) + rows * (2 + size_t(Dv)) + size_t(kKeyBlock);
  for (int th = 0; th < pool.size(); th++) s.thread_buffer(th, per_thread);

  pool.parallel_for(int64_t(Hk) * tiles, [&](int64_t item, int thread) {
    const int g = int(item / tiles);
    const int64_t t0 = (item % tiles) * kQueryTile, t1 = std::min(m, t0 + kQueryTile);
    const int32_t len = cache.len(l, g);
    const int32_t before = len - int32_t(m);  // entries older than this call's tokens
    float* K = s.per_thread[size_t(thread)].data();
    float* V = K + size_t(kKeyBlock) * size_t(D);
    float* mx = V + size_t(kKeyBlock) * size_t(Dv);
    float* sum = mx + rows;
    float* acc = sum + rows;
    float* sc = acc + rows * size_t(Dv);
    std::fill(mx, mx + rows, -std::numeric_limits<float>::infinity());
    std::fill(sum, sum + rows, 0.0f);
    std::fill(acc, acc + rows * size_t(Dv), 0.0f);

    const int32_t n_keys = before + int32_t(t1);  // the last query of the tile sees this many
    for (int32_t j0 = 0; j0 < n_keys; j0 += kKeyBlock) {
      const int32_t nb = std::min(kKeyBlock, n_keys - j0);
      cache.read_k(l, g, j0, nb, K);
      cache.read_v(l, g, j0, nb, V);
      for (int64_t t = t0; t < t1; t++) {
        const int32_t visible = std::min(nb, before + int32_t(t) + 1 - j0);
        if (visible <= 0) continue;
        for (int hh = 0; hh < G; hh++) {
          const int h = g * G + hh;
          const size_t r = size_t(t - t0) * size_t(G) + size_t(hh);
          const float* qr = q + t * qw + int64_t(h) * D;
          float bmax = -std::numeric_limits<float>::infinity();
          for (int32_t j = 0; j < visible; j++) {
            const float* kr = K + size_t(j) * size_t(D);
            float dot = 0;
            for (int d = 0; d < D; d++) dot += qr[d] * kr[d];
            sc[j] = dot * scale;
            bmax = std::max(bmax, sc[j]);
          }
          // Online softmax: rescale what was accumulated when the running max grows.
          const float new_max = std::max(mx[r], bmax);
          const float carry = std::exp(mx[r] - new_max);
          float* o = acc + r * size_t(Dv);
          if (carry != 1.0f) {
            sum[r] *= carry;
            for (int d = 0; d < Dv; d++) o[d] *= carry;
          }
          for (int32_t j = 0; j < visible; j++) {
            const float p = std::exp(sc[j] - new_max);
            sum[r] += p;
            const float* vr = V + size_t(j) * size_t(Dv);
            for (int d = 0; d < Dv; d++) o[d] += p * vr[d];
          }
          mx[r] = new_max;
        }
      }
    }
    for (int64_t t = t0; t < t1; t++)
      for (int hh = 0; hh < G; hh++) {
        const size_t r = size_t(t - t0) * size_t(G) + size_t(hh);
        const float inv = 1.0f / sum[r];
        float* o = out + t * ow + int64_t(g * G + hh) * Dv;
        for (int d = 0; d < Dv; d++) o[d] = acc[r * size_t(Dv) + size_t(d)] * inv;
      }
  });
}

void attention_reference(ThreadPool& pool, Scratch& s, const float* q, const FlatKvCache& cache, int l, int64_t m,
                         float* out, const HParams& hp) {
  const int H = hp.n_head, G = hp.n_gqa(), D = hp.head_dim, Dv = hp.head_dim_v;
  const int64_t qw = hp.q_width(), ow = int64_t(H) * Dv;
  const float scale = 1.0f / std::sqrt(float(D));
  int32_t max_len = 0;
  for (int g = 0; g < hp.n_head_kv; g++) max_len = std::max(max_len, cache.len(l, g));
  const size_t per_thread = size_t(max_len) * size_t(1 + D + Dv);
  for (int th = 0; th < pool.size(); th++) s.thread_buffer(th, per_thread);
  pool.parallel_for(m * H, [&](int64_t item, int thread) {
    const int64_t t = item / H;
    const int h = int(item % H), g = h / G;
    const int32_t n_keys = cache.len(l, g) - int32_t(m) + int32_t(t) + 1;
    float* sc = s.per_thread[size_t(thread)].data();
    float* K = sc + max_len;
    float* V = K + size_t(max_len) * size_t(D);
    cache.read_k(l, g, 0, n_keys, K);
    cache.read_v(l, g, 0, n_keys, V);
    const float* qr = q + t * qw + int64_t(h) * D;
    float mx = -std::numeric_limits<float>::infinity();
    for (int32_t j = 0; j < n_keys; j++) {
      float dot = 0;
      for (int d = 0; d < D; d++) dot += qr[d] * K[size_t(j) * size_t(D) + size_t(d)];
      sc[j] = dot * scale;
      mx = std::max(mx, sc[j]);
    }
    double sum = 0;
    for (int32_t j = 0; j < n_keys; j++) sum += sc[j] = std::exp(sc[j] - mx);
    const float inv = float(1.0 / sum);
    float* o = out + t * ow + int64_t(h) * Dv;
    std::fill(o, o + Dv, 0.0f);
    for (int32_t j = 0; j < n_keys; j++) {
      const float p = sc[j] * inv;
      for (int d = 0; d < Dv; d++) o[d] += p * V[size_t(j) * size_t(Dv) + size_t(d)];
    }
  });
}

}  // namespace folio::cpu
