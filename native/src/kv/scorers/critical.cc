// CriticalKV (arXiv 2502.03805; docs/compression.md, "Scorers"): an entry matters by the attention it gets and by
// how far its value moves the layer's output, ‖W_o v‖. Two stages: half of each head's cap by the window's
// attention alone, the rest by (attention + ε) · ‖W_o v‖.
#include <cmath>

#include "kv/scorers/scorers.h"

namespace folio::kv {

namespace {
constexpr float kEpsilon = 1e-4f;  // kvpress's default: without it the value norm alone decides ties at zero
}

std::vector<float> projected_value_norms(const LayerView& v, int g, const float* V) {
  const WindowShape& s = v.shape;
  const int G = s.n_head / s.n_head_kv, Dv = s.head_dim_v;
  const int32_t Lg = s.len(g);
  std::vector<float> out(static_cast<size_t>(Lg), 0.0f);
  std::vector<double> Gx(static_cast<size_t>(Dv));
  for (int32_t j = 0; j < Lg; j++) {
    const float* x = V + int64_t(j) * Dv;
    double sum = 0;
    for (int hh = 0; hh < G; hh++) {
      // ‖W_o^(h) x‖² = xᵀ (W_o^(h)ᵀ W_o^(h)) x, the Gram matrix [Dv, Dv] of head h's slice
      const float* gram = v.value_gram + int64_t(g * G + hh) * Dv * Dv;
      double q = 0;
      for (int a = 0; a < Dv; a++) {
        double row = 0;
        for (int c = 0; c < Dv; c++) row += double(gram[int64_t(a) * Dv + c]) * x[c];
        q += row * x[a];
      }
      sum += std::sqrt(std::max(q, 0.0));
    }
    out[size_t(j)] = float(sum / G);
  }
  return out;
}

EntryScores critical_scores(ThreadPool& pool, const LayerView& v) {
  const WindowShape& s = v.shape;
  EntryScores out;
  out.first = v.window.score;
  out.score.resize(size_t(s.n_head_kv));
  pool.parallel_for(s.n_head_kv, [&](int64_t g, int) {
    const int32_t Lg = s.len(int(g)), n = Lg - s.w;
    std::vector<float> V(size_t(Lg) * size_t(s.head_dim_v));
    v.values(int(g), V.data());
    const std::vector<float> norm = projected_value_norms(v, int(g), V.data());
    std::vector<float>& sc = out.score[size_t(g)];
    sc.resize(size_t(n));
    for (int32_t j = 0; j < n; j++) sc[size_t(j)] = (out.first[size_t(g)][size_t(j)] + kEpsilon) * norm[size_t(j)];
  });
  return out;
}

}  // namespace folio::kv
