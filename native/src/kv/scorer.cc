#include "kv/scorer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace folio::kv {

std::vector<float> transposed_keys(const WindowShape& s, const EntryReader& keys, int g) {
  const int D = s.head_dim;
  const int32_t Lg = s.len(g);
  std::vector<float> K(size_t(Lg) * size_t(D)), Kt(size_t(Lg) * size_t(D));
  keys(g, K.data());
  for (int32_t j = 0; j < Lg; j++)
    for (int d = 0; d < D; d++) Kt[size_t(d) * size_t(Lg) + size_t(j)] = K[size_t(j) * size_t(D) + size_t(d)];
  return Kt;
}

void window_probs(const WindowShape& s, const float* qw, int h, int i, const float* Kt, float* p) {
  const int D = s.head_dim;
  const int32_t Lg = s.len(h / (s.n_head / s.n_head_kv));
  const int32_t visible = Lg - s.w + i + 1;
  const float* q = qw + (int64_t(i) * s.n_head + h) * D;
  const float scale = 1.0f / std::sqrt(float(D));
  // Every key's dot product sums over d in order, as one loop per key would; the loop over the keys inside
  // vectorises (a loop per key would be one chain of dependent additions).
  std::fill(p, p + visible, 0.0f);
  for (int d = 0; d < D; d++) {
    const float qd = q[d];
    const float* row = Kt + int64_t(d) * Lg;
    for (int32_t j = 0; j < visible; j++) p[j] += qd * row[j];
  }
  float mx = -std::numeric_limits<float>::infinity();
  for (int32_t j = 0; j < visible; j++) {
    p[j] *= scale;
    mx = std::max(mx, p[j]);
  }
  double sum = 0;
  for (int32_t j = 0; j < visible; j++) sum += p[j] = std::exp(p[j] - mx);
  const float inv = float(1.0 / sum);
  for (int32_t j = 0; j < visible; j++) p[j] *= inv;
  std::fill(p + visible, p + Lg, 0.0f);
}

int32_t WindowShape::max_len() const {
  int32_t m = L;
  for (int32_t x : lens) m = std::max(m, x);
  return m;
}

std::vector<float> max_pool(const std::vector<float>& x, int kernel) {
  const int64_t n = int64_t(x.size()), r = kernel / 2;
  std::vector<float> out(x.size());
  for (int64_t j = 0; j < n; j++) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t t = std::max<int64_t>(0, j - r); t <= std::min(n - 1, j + r); t++) m = std::max(m, x[size_t(t)]);
    out[size_t(j)] = m;
  }
  return out;
}

WindowScores snapkv_scores(ThreadPool& pool, const WindowShape& s, const float* qw, const EntryReader& keys,
                           int kernel) {
  const int G = s.n_head / s.n_head_kv;
  WindowScores out;
  out.attn.resize(size_t(s.n_head_kv));
  out.score.resize(size_t(s.n_head_kv));
  pool.parallel_for(s.n_head_kv, [&](int64_t g, int) {
    const int32_t Lg = s.len(int(g));
    const std::vector<float> Kt = transposed_keys(s, keys, int(g));
    std::vector<float> p(static_cast<size_t>(Lg));
    std::vector<double> acc(size_t(Lg), 0.0);
    for (int hh = 0; hh < G; hh++)
      for (int i = 0; i < s.w; i++) {
        window_probs(s, qw, int(g) * G + hh, i, Kt.data(), p.data());
        for (int32_t j = 0; j < Lg; j++) acc[size_t(j)] += p[size_t(j)];
      }
    std::vector<float>& a = out.attn[size_t(g)];
    a.resize(size_t(Lg));
    const double norm = 1.0 / (double(G) * double(s.w));  // mean over the window, then over the group
    for (int32_t j = 0; j < Lg; j++) a[size_t(j)] = float(acc[size_t(j)] * norm);
    out.score[size_t(g)] = max_pool(std::vector<float>(a.begin(), a.begin() + (Lg - s.w)), kernel);
  });
  return out;
}

double attention_l1_loss(ThreadPool& pool, const WindowShape& s, const float* qw, const EntryReader& keys,
                         const EntryReader& values, const std::vector<std::vector<uint8_t>>& keep) {
  const int G = s.n_head / s.n_head_kv, Dv = s.head_dim_v;
  std::vector<double> loss(size_t(s.n_head_kv), 0.0);
  pool.parallel_for(s.n_head_kv, [&](int64_t g, int) {
    const int32_t Lg = s.len(int(g));
    const std::vector<float> Kt = transposed_keys(s, keys, int(g));
    std::vector<float> V(size_t(Lg) * size_t(Dv)), p(static_cast<size_t>(Lg));
    values(int(g), V.data());
    std::vector<double> full(static_cast<size_t>(Dv)), kept(static_cast<size_t>(Dv));
    for (int hh = 0; hh < G; hh++)
      for (int i = 0; i < s.w; i++) {
        window_probs(s, qw, int(g) * G + hh, i, Kt.data(), p.data());
        std::fill(full.begin(), full.end(), 0.0);
        std::fill(kept.begin(), kept.end(), 0.0);
        double kept_mass = 0;
        for (int32_t j = 0; j < Lg; j++) {
          if (p[size_t(j)] == 0) continue;
          const float* v = V.data() + int64_t(j) * Dv;
          const bool k = keep[size_t(g)][size_t(j)] != 0;
          if (k) kept_mass += p[size_t(j)];
          for (int d = 0; d < Dv; d++) {
            full[size_t(d)] += double(p[size_t(j)]) * v[d];
            if (k) kept[size_t(d)] += double(p[size_t(j)]) * v[d];
          }
        }
        double l1 = 0;
        for (int d = 0; d < Dv; d++)
          l1 += std::fabs(full[size_t(d)] - (kept_mass > 0 ? kept[size_t(d)] / kept_mass : 0.0));
        loss[size_t(g)] += l1;
      }
  });
  double total = 0;
  for (double l : loss) total += l;
  return total / (double(s.n_head) * double(s.w));
}

}  // namespace folio::kv
