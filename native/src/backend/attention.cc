// Attention over the KV cache.
#include <algorithm>
#include <cmath>

#include "backend/cpu-ops.h"

namespace folio::cpu {

void attention(ThreadPool& pool, Scratch& s, const float* q, const float* K, const float* V, float* out, int64_t n,
               int32_t p0, const HParams& hp) {
  const int H = hp.n_head, G = hp.n_gqa(), D = hp.head_dim, Dv = hp.head_dim_v;
  const int64_t qw = hp.q_width(), kw = hp.k_width(), vw = hp.v_width(), ow = int64_t(H) * Dv;
  const float scale = 1.0f / std::sqrt(float(D));
  const size_t n_keys_max = size_t(p0 + n);
  for (int th = 0; th < pool.size(); th++) s.thread_buffer(th, n_keys_max);
  pool.parallel_for(n * H, [&](int64_t item, int thread) {
    const int64_t t = item / H;
    const int h = int(item % H), kvh = h / G;
    const int64_t n_keys = p0 + t + 1;
    const float* qr = q + t * qw + int64_t(h) * D;
    float* sc = s.per_thread[size_t(thread)].data();
    float mx = -INFINITY;
    for (int64_t j = 0; j < n_keys; j++) {
      const float* kr = K + j * kw + int64_t(kvh) * D;
      float dot = 0;
      for (int d = 0; d < D; d++) dot += qr[d] * kr[d];
      sc[j] = dot * scale;
      mx = std::max(mx, sc[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < n_keys; j++) {
      sc[j] = std::exp(sc[j] - mx);
      sum += sc[j];
    }
    const float inv = float(1.0 / sum);
    float* o = out + t * ow + int64_t(h) * Dv;
    std::fill(o, o + Dv, 0.0f);
    for (int64_t j = 0; j < n_keys; j++) {
      const float p = sc[j] * inv;
      const float* vr = V + j * vw + int64_t(kvh) * Dv;
      for (int d = 0; d < Dv; d++) o[d] += p * vr[d];
    }
  });
}

}  // namespace folio::cpu
