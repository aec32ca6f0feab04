// ExpectedAttention (kvpress; docs/compression.md, "Scorers"): no question is known yet, so score each entry by
// the attention the queries to come are expected to give it. The prefix's queries before RoPE have a mean μ
// and a covariance Σ per head; rotated by the mean RoPE rotation R̄ over the next kFuture positions, a query
// q ~ N(R̄μ, R̄ΣR̄ᵀ) gives key k the expected weight exp(k·μ'/√d + kᵀΣ'k / 2d). Softmax over the head's entries,
// mean over the query group, times ‖v‖ (+ε); the document's first kSinks tokens are always kept.
#include <cmath>
#include <limits>

#include "kv/scorers/scorers.h"

namespace folio::kv {

namespace {
constexpr int32_t kFuture = 512;   // future positions averaged over (kvpress's n_future_positions)
constexpr double kEpsilon = 1e-2;  // kvpress's registry default for expected_attention
}  // namespace

void QueryStats::add(const float* q, int64_t m, int32_t first_token, int n_head, int head_dim) {
  const int64_t D = head_dim;
  if (sum.empty()) sum.assign(size_t(n_head * D), 0.0), outer.assign(size_t(n_head * D * D), 0.0);
  for (int64_t t = std::max<int64_t>(0, kSinks - first_token); t < m; t++) {
    count++;
    for (int h = 0; h < n_head; h++) {
      const float* x = q + (t * n_head + h) * D;
      double* su = sum.data() + h * D;
      double* ou = outer.data() + h * D * D;
      for (int64_t a = 0; a < D; a++) {
        su[a] += x[a];
        for (int64_t c = 0; c < D; c++) ou[a * D + c] += double(x[a]) * x[c];
      }
    }
  }
}

EntryScores expected_scores(ThreadPool& pool, const LayerView& v) {
  const WindowShape& s = v.shape;
  const int Hk = s.n_head_kv, G = s.n_head / Hk, D = s.head_dim, Dv = s.head_dim_v;
  const QueryStats& qs = *v.queries;
  // The mean rotation R̄ over positions next_pos .. next_pos + kFuture − 1, pair by pair: [[c, −s], [s, c]].
  const int pairs = int(v.rope->inv_freq.size());
  std::vector<double> c(static_cast<size_t>(pairs), 0.0), sn(static_cast<size_t>(pairs), 0.0);
  for (int i = 0; i < pairs; i++) {
    for (int32_t p = 0; p < kFuture; p++) {
      const double th = double(v.next_pos + p) * v.rope->inv_freq[size_t(i)];
      c[size_t(i)] += std::cos(th), sn[size_t(i)] += std::sin(th);
    }
    c[size_t(i)] /= kFuture, sn[size_t(i)] /= kFuture;
  }
  // R̄ as a dense [D, D] matrix (identity past the rotated dims).
  std::vector<double> R(size_t(D) * size_t(D), 0.0);
  for (int a = 0; a < D; a++) R[size_t(a) * D + a] = 1;
  for (int i = 0; i < pairs; i++) {
    const int a = v.rope->neox ? i : 2 * i, b = v.rope->neox ? i + pairs : 2 * i + 1;
    R[size_t(a) * D + a] = c[size_t(i)], R[size_t(a) * D + b] = -sn[size_t(i)];
    R[size_t(b) * D + a] = sn[size_t(i)], R[size_t(b) * D + b] = c[size_t(i)];
  }

  EntryScores out;
  out.score.resize(size_t(Hk));
  pool.parallel_for(Hk, [&](int64_t g, int) {
    const int32_t Lg = s.len(int(g)), n = Lg - s.w;
    std::vector<float> K(size_t(Lg) * size_t(D)), V(size_t(Lg) * size_t(Dv));
    v.keys(int(g), K.data());
    v.values(int(g), V.data());
    std::vector<double> mean(static_cast<size_t>(Lg), 0.0), logit(static_cast<size_t>(Lg));
    std::vector<double> mu(static_cast<size_t>(D)), cov(size_t(D) * size_t(D)), tmp(size_t(D) * size_t(D));
    for (int hh = 0; hh < G; hh++) {
      const int h = int(g) * G + hh;
      // μ' = R̄μ, Σ' = R̄ΣR̄ᵀ with Σ = E[qqᵀ] − μμᵀ
      const double cnt = std::max(qs.count, 1.0);
      const double* su = qs.sum.data() + int64_t(h) * D;
      const double* ou = qs.outer.data() + int64_t(h) * D * D;
      for (int a = 0; a < D; a++) {
        mu[size_t(a)] = 0;
        for (int b = 0; b < D; b++) mu[size_t(a)] += R[size_t(a) * D + b] * su[b] / cnt;
      }
      for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++) {
          double x = 0;
          for (int k = 0; k < D; k++) x += R[size_t(a) * D + k] * (ou[k * D + b] / cnt - su[k] * su[b] / (cnt * cnt));
          tmp[size_t(a) * D + b] = x;
        }
      for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++) {
          double x = 0;
          for (int k = 0; k < D; k++) x += tmp[size_t(a) * D + k] * R[size_t(b) * D + k];
          cov[size_t(a) * D + b] = x;
        }
      double mx = -std::numeric_limits<double>::infinity();
      for (int32_t j = 0; j < Lg; j++) {
        const float* k = K.data() + int64_t(j) * D;
        double lin = 0, quad = 0;
        for (int a = 0; a < D; a++) {
          lin += k[a] * mu[size_t(a)];
          double row = 0;
          for (int b = 0; b < D; b++) row += cov[size_t(a) * D + b] * k[b];
          quad += k[a] * row;
        }
        logit[size_t(j)] = lin / std::sqrt(double(D)) + quad / (2.0 * D);
        mx = std::max(mx, logit[size_t(j)]);
      }
      double sum = 0;
      for (int32_t j = 0; j < Lg; j++) sum += logit[size_t(j)] = std::exp(logit[size_t(j)] - mx);
      for (int32_t j = 0; j < Lg; j++) mean[size_t(j)] += logit[size_t(j)] / sum / G;
    }
    std::vector<float>& sc = out.score[size_t(g)];
    sc.resize(size_t(n));
    for (int32_t j = 0; j < n; j++) {
      const float* x = V.data() + int64_t(j) * Dv;
      double vn = 0;
      for (int a = 0; a < Dv; a++) vn += double(x[a]) * x[a];
      sc[size_t(j)] = float((mean[size_t(j)] + kEpsilon) * std::sqrt(vn));
    }
  });
  // The sinks: the document's first tokens stay (entries 0 .. kSinks − 1 are they as long as they are kept).
  float top = 0;
  for (const auto& sc : out.score)
    for (float x : sc) top = std::max(top, x);
  for (auto& sc : out.score)
    for (int32_t j = 0; j < std::min<int32_t>(QueryStats::kSinks, int32_t(sc.size())); j++) sc[size_t(j)] = top;
  return out;
}

}  // namespace folio::kv
