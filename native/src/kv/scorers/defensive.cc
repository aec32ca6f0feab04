// DefensiveKV (arXiv 2510.13334, ICLR 2026; docs/compression.md, "Scorers"): rank by the worst case rather than
// the average, so that an entry one later question needs is not averaged away. Per KV head: each window
// query's attention, smoothed (mean over 5 neighbours, the row's mass kept); the largest over the query group
// and the window; floored at the head's mean; weighted by the entry's share of ‖W_o v‖ among the heads. The
// entries that hold most of each head's window attention (0.9 less what the window gives itself, at most the
// head's budget) are protected with the layer's top score.
#include <algorithm>
#include <numeric>

#include "kv/scorers/scorers.h"

namespace folio::kv {

namespace {
constexpr int kPool = 5;            // the smoothing's kernel (DefensiveKV's default)
constexpr double kProtected = 0.9;  // the attention mass the protected entries hold, with the window's
}  // namespace

EntryScores defensive_scores(ThreadPool& pool, const LayerView& v) {
  const WindowShape& s = v.shape;
  const int Hk = s.n_head_kv, G = s.n_head / Hk;
  EntryScores out;
  out.score.resize(size_t(Hk));
  std::vector<std::vector<float>> ave(static_cast<size_t>(Hk)), norm(static_cast<size_t>(Hk));
  std::vector<double> window_mass(static_cast<size_t>(Hk), 0.0);
  pool.parallel_for(Hk, [&](int64_t g, int) {
    const int32_t Lg = s.len(int(g)), n = Lg - s.w;
    const std::vector<float> Kt = transposed_keys(s, v.keys, int(g));
    std::vector<float> V(size_t(Lg) * size_t(s.head_dim_v));
    v.values(int(g), V.data());
    std::vector<float> p(static_cast<size_t>(Lg)), smooth(static_cast<size_t>(n)), m(static_cast<size_t>(n), 0.0f);
    std::vector<double> mean(static_cast<size_t>(n), 0.0);
    for (int hh = 0; hh < G; hh++)
      for (int i = 0; i < s.w; i++) {
        window_probs(s, v.qw, int(g) * G + hh, i, Kt.data(), p.data());
        double base = 0, pooled = 0;
        for (int32_t j = 0; j < n; j++) base += p[size_t(j)], mean[size_t(j)] += p[size_t(j)];
        for (int32_t j = n; j < Lg; j++) window_mass[size_t(g)] += p[size_t(j)];
        for (int32_t j = 0; j < n; j++) {  // zero padding counted in the mean, as torch's avg_pool1d does
          double sum = 0;
          for (int32_t t = std::max(0, j - kPool / 2); t <= std::min(n - 1, j + kPool / 2); t++) sum += p[size_t(t)];
          smooth[size_t(j)] = float(sum / kPool);
          pooled += smooth[size_t(j)];
        }
        const double keep_mass = pooled > 0 ? base / pooled : 0;
        for (int32_t j = 0; j < n; j++) m[size_t(j)] = std::max(m[size_t(j)], float(smooth[size_t(j)] * keep_mass));
      }
    const double floor = n > 0 ? std::accumulate(m.begin(), m.end(), 0.0) / n : 0;
    for (float& x : m) x = std::max(x, float(floor));
    out.score[size_t(g)] = std::move(m);
    ave[size_t(g)].resize(size_t(n));
    for (int32_t j = 0; j < n; j++) ave[size_t(g)][size_t(j)] = float(mean[size_t(j)]);
    norm[size_t(g)] = projected_value_norms(v, int(g), V.data());
  });

  // The value weighting, each entry's norm as a share of the heads' at the same token (one pass: every head
  // holds the same tokens); while a long document is read in chunks the heads hold different tokens, and
  // each head's norms are shared against the heads' mean norms instead.
  bool same_tokens = true;
  for (int g = 0; g < Hk; g++) same_tokens = same_tokens && s.len(g) == s.len(0);
  std::vector<double> head_mean(static_cast<size_t>(Hk), 0.0);
  double mean_sum = 0;
  for (int g = 0; g < Hk; g++) {
    const std::vector<float>& N = norm[size_t(g)];
    head_mean[size_t(g)] = N.empty() ? 0 : std::accumulate(N.begin(), N.end(), 0.0) / double(N.size());
    mean_sum += head_mean[size_t(g)];
  }
  float top = 0;
  for (int g = 0; g < Hk; g++) {
    std::vector<float>& sc = out.score[size_t(g)];
    for (size_t j = 0; j < sc.size(); j++) {
      double share_of = mean_sum;
      if (same_tokens) {
        share_of = 0;
        for (int h = 0; h < Hk; h++) share_of += norm[size_t(h)][j];
      }
      sc[j] = float(sc[j] * (share_of > 0 ? norm[size_t(g)][j] / share_of : 1.0));
      top = std::max(top, sc[j]);
    }
  }

  // Protection: per head, the fewest entries (by window attention) that reach kProtected less the window's own
  // mass, at most the budget, score the layer's top.
  double window_bias = 0;
  for (double x : window_mass) window_bias += x;
  window_bias /= double(s.n_head) * double(s.w);
  const double tau = kProtected - window_bias;
  for (int g = 0; g < Hk; g++) {
    const std::vector<float>& a = ave[size_t(g)];
    const double total = std::accumulate(a.begin(), a.end(), 0.0);
    if (!(total > 0)) continue;
    std::vector<int32_t> order(a.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return a[size_t(x)] > a[size_t(y)]; });
    double cum = 0;
    int32_t count = 0;
    while (count < int32_t(order.size()) && (cum += a[size_t(order[size_t(count)])] / total) < tau) count++;
    count = std::min(count, v.b);
    for (int32_t k = 0; k < count; k++) out.score[size_t(g)][size_t(order[size_t(k)])] = top;
  }
  return out;
}

}  // namespace folio::kv
