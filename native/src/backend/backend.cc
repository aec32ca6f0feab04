#include "backend/backend.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace folio::backend {

void Backend::watch_attention(const float* q, const KvStore& kv, int l, int64_t m, int n_head, int head_dim, Fold fold,
                              std::vector<std::vector<float>>& acc) {
  const int Hk = kv.n_head_kv(), G = n_head / Hk, D = head_dim;
  std::vector<float> K, qh(size_t(m) * size_t(n_head) * size_t(D)), p;
  download(qh.data(), q, qh.size() * sizeof(float));
  const float scale = 1.0f / std::sqrt(float(D));
  for (int g = 0; g < Hk; g++) {
    const int32_t Lg = kv.len(l, g);
    K.resize(size_t(Lg) * size_t(D));
    p.resize(size_t(Lg));
    kv.read_k(l, g, Lg, K.data());
    std::vector<float>& b = acc[size_t(g)];
    for (int hh = 0; hh < G; hh++)
      for (int64_t t = 0; t < m; t++) {
        const float* qt = qh.data() + (t * n_head + int64_t(g) * G + hh) * D;
        const int32_t visible = Lg - int32_t(m) + int32_t(t) + 1;
        float mx = -std::numeric_limits<float>::infinity();
        for (int32_t j = 0; j < visible; j++) {
          double dot = 0;
          for (int d = 0; d < D; d++) dot += double(qt[d]) * K[size_t(j) * D + size_t(d)];
          mx = std::max(mx, p[size_t(j)] = float(dot) * scale);
        }
        double sum = 0;
        for (int32_t j = 0; j < visible; j++) sum += p[size_t(j)] = std::exp(p[size_t(j)] - mx);
        const size_t n = std::min(b.size(), size_t(visible));
        if (fold == Fold::Max)
          for (size_t j = 0; j < n; j++) b[j] = std::max(b[j], float(p[j] / sum));
        else
          for (size_t j = 0; j < n; j++) b[j] += float(p[j] / sum);
      }
  }
}

}  // namespace folio::backend
