// The scorers of kv/scorers/ on small fixed cases against the published formulas, computed independently
// (native/tests/scorers-reference.py, numpy, as the papers and kvpress write them; its numbers are pasted below):
// SnapKV's window, CriticalKV, DefensiveKV, ExpectedAttention; KVzip's re-reading attention on a cache of five entries;
// the global layer schedule, which gives the layer with the better entries more of the budget; and a chunked
// read's budget at a ratio and in tokens.
//   scorers-selftest
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "backend/cpu-backend.h"
#include "forward/compress-layer.h"
#include "kv/compressor.h"
#include "kv/scorers/scorers.h"

using namespace folio;

namespace {

int failures = 0;

void expect_near(const char* what, const std::vector<std::vector<float>>& got,
                 const std::vector<std::vector<double>>& want, double tol) {
  bool ok = got.size() == want.size();
  double worst = 0;
  for (size_t g = 0; ok && g < got.size(); g++) {
    ok = got[g].size() == want[g].size();
    for (size_t j = 0; ok && j < got[g].size(); j++)
      worst = std::max(worst, std::fabs(double(got[g][j]) - want[g][j]) / std::max(1.0, std::fabs(want[g][j])));
  }
  if (!ok || !(worst <= tol)) {
    failures++;
    std::printf("FAIL %s: worst relative error %g (shape %s)\n", what, worst, ok ? "ok" : "wrong");
    for (const auto& row : got) {
      for (float x : row) std::printf(" %.9g", double(x));
      std::printf("\n");
    }
  } else {
    std::printf("ok %s (worst %.2g)\n", what, worst);
  }
}

// Two KV heads of two query heads each, head_dim 4, ten entries, a window of 2; inputs from fixed formulas
// (the same as the numpy reference's).
constexpr int Hk = 2, H = 4, D = 4, Dv = 4, W = 2, L = 10, E = 3;

void scorer_cases(ThreadPool& pool) {
  std::vector<float> K(size_t(Hk) * L * D), V(size_t(Hk) * L * Dv), qw(size_t(W) * H * D), wo(size_t(E) * H * Dv);
  for (int g = 0; g < Hk; g++)
    for (int j = 0; j < L; j++)
      for (int d = 0; d < D; d++) {
        K[size_t((g * L + j) * D + d)] = float(std::sin(1 + g * 7 + j * 3 + d * 1.3) * 1.5);
        V[size_t((g * L + j) * Dv + d)] = float(std::cos(2 + g * 5 + j * 1.7 + d * 0.9));
      }
  for (int i = 0; i < W; i++)
    for (int h = 0; h < H; h++)
      for (int d = 0; d < D; d++)
        qw[size_t((i * H + h) * D + d)] = float(std::sin(0.5 + i * 2.1 + h * 1.1 + d * 0.7) * 2);
  for (int r = 0; r < E; r++)
    for (int c = 0; c < H * Dv; c++) wo[size_t(r * H * Dv + c)] = float(std::sin(0.3 + r * 1.9 + c * 0.37));
  std::vector<float> Q(size_t(10) * H * D);  // ten prefix queries before RoPE, tokens 0 .. 9
  for (int t = 0; t < 10; t++)
    for (int h = 0; h < H; h++)
      for (int d = 0; d < D; d++)
        Q[size_t((t * H + h) * D + d)] = float(std::cos(0.2 + t * 0.61 + h * 1.3 + d * 0.45) * 1.5);

  kv::WindowShape s;
  s.n_head = H, s.n_head_kv = Hk, s.head_dim = D, s.head_dim_v = Dv, s.L = L, s.w = W;
  const kv::EntryReader keys = [&](int g, float* out) { std::copy_n(K.begin() + g * L * D, L * D, out); };
  const kv::EntryReader values = [&](int g, float* out) { std::copy_n(V.begin() + g * L * Dv, L * Dv, out); };
  const kv::WindowScores ws = kv::snapkv_scores(pool, s, qw.data(), keys, 3);
  expect_near("snapkv window, kernel 3", ws.score,
              {{0.199568793, 0.199568793, 0.167793755, 0.167793755, 0.135950667, 0.135950667, 0.114088717, 0.114088717},
               {0.13218088, 0.13218088, 0.150400424, 0.150400424, 0.157955717, 0.157955717, 0.158516999, 0.158516999}},
              1e-6);

  Weight w;
  w.data = reinterpret_cast<const uint8_t*>(wo.data());
  w.type = TensorType::F32, w.cols = H * Dv, w.rows = E, w.row_bytes = size_t(H * Dv) * sizeof(float);
  const std::vector<float> gram = forward::value_gram(w, H, Dv, pool);
  kv::QueryStats qs;
  qs.add(Q.data(), 6, 0, H, D);  // in two calls, as chunks come: the sinks are tokens 0 .. 3 of the first
  qs.add(Q.data() + 6 * H * D, 4, 6, H, D);
  kv::RopeAngles rope;
  rope.inv_freq = {1.0f, 0.01f};
  const kv::LayerView view{s, ws, qw.data(), keys, values, 2, gram.data(), &qs, &rope, 10, nullptr};

  expect_near("critical", kv::critical_scores(pool, view).score,
              {{0.519629204, 0.321620458, 0.411969504, 0.316920796, 0.300185464, 0.297484555, 0.217166012, 0.278240034},
               {0.234823356, 0.305354046, 0.313043977, 0.303344067, 0.372810652, 0.270219127, 0.405463842,
                0.236221175}},
              1e-5);
  expect_near(
      "defensive", kv::defensive_scores(pool, view).score,
      {{0.109515097, 0.0690828017, 0.109515097, 0.0703437651, 0.0725633287, 0.0816301316, 0.0620515258, 0.0902785205},
       {0.0610334114, 0.0886500421, 0.0822727024, 0.0941765161, 0.078297586, 0.109515097, 0.0863018608, 0.109515097}},
      1e-5);
  expect_near("expected", kv::expected_scores(pool, view).score,
              {{0.175457138, 0.175457138, 0.175457138, 0.175457138, 0.156962182, 0.150331087, 0.156604714, 0.150938004},
               {0.175457138, 0.175457138, 0.175457138, 0.175457138, 0.138672795, 0.175457138, 0.135724049,
                0.174396098}},
              1e-5);
}

// KVzip: a cache of 3 document entries and 2 of the re-reading; each document entry keeps the largest
// attention either re-reading query gave it (query 0 sees 4 entries, query 1 all 5).
void reread_case(ThreadPool& pool, backend::Backend& be) {
  kv::CompressOptions o;
  o.method = kv::parse_method("kvzip");
  o.window = 1, o.budget_tokens = 2;
  kv::WindowShape s;
  s.n_head = 1, s.n_head_kv = 1, s.head_dim = 2, s.head_dim_v = 2, s.L = 3;
  kv::Compressor comp(o, s, 1, 8, 8, "f32");
  comp.begin_chunk(0, 3, 0);
  FlatKvCache cache(1, 1, 2, 2, KvType::F32);
  const float k[] = {1, 0, 0, 1, 1, 1, 0.5f, -0.5f, -1, 0.5f}, v[10] = {};
  const int32_t pos[] = {0, 1, 2, 3, 4};
  cache.reserve(0, 5, 0);
  cache.append(0, k, v, pos, 5);
  std::unique_ptr<backend::KvStore> store = be.kv_store_from_host(std::move(cache));
  const float q[] = {2, 1, -1, 2};
  be.watch_attention(q, *store, 0, 2, 1, 2, backend::Backend::Fold::Max,
                     comp.seen(0));  // the forward pass's watch over the re-reading
  expect_near("kvzip re-reading attention", comp.seen(0), {{0.258570926, 0.370766464, 0.524411568}}, 1e-6);
}

// Citations: the same cache and queries, the attention added instead. Query 0 (2, 1) sees entries 0..3 with
// scores (2, 1, 3, 0.5)/√2, query 1 (−1, 2) all 5 with (−1, 2, 1, −1.5, 2)/√2; each document entry gets the sum
// of its two softmax probabilities.
void citation_case(backend::Backend& be) {
  FlatKvCache cache(1, 1, 2, 2, KvType::F32);
  const float k[] = {1, 0, 0, 1, 1, 1, 0.5f, -0.5f, -1, 0.5f}, v[10] = {};
  const int32_t pos[] = {0, 1, 2, 3, 4};
  cache.reserve(0, 5, 0);
  cache.append(0, k, v, pos, 5);
  std::unique_ptr<backend::KvStore> store = be.kv_store_from_host(std::move(cache));
  const float q[] = {2, 1, -1, 2};
  auto softmax = [](std::vector<double> x) {
    double sum = 0;
    for (double& v : x) sum += v = std::exp(v / std::sqrt(2.0));
    for (double& v : x) v /= sum;
    return x;
  };
  const std::vector<double> p0 = softmax({2, 1, 3, 0.5}), p1 = softmax({-1, 2, 1, -1.5, 2});
  std::vector<std::vector<float>> acc{{0, 0, 0}};
  be.watch_attention(q, *store, 0, 2, 1, 2, backend::Backend::Fold::Sum, acc);
  expect_near("citation attention sum", acc, {{p0[0] + p1[0], p0[1] + p1[1], p0[2] + p1[2]}}, 1e-6);
}

// The CPU's vectorised attention watch against the backend's host reference, folding by the largest (the
// re-reading) and by the sum (citations): random caches whose heads hold different numbers of entries, F32 and
// F16, GQA groups of 1 to 4.
void reread_kernel_case(ThreadPool& pool, backend::Backend& be) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.5f);
  using Fold = backend::Backend::Fold;
  for (Fold fold : {Fold::Max, Fold::Sum})
    for (KvType type : {KvType::F32, KvType::F16})
      for (int trial = 0; trial < 6; trial++) {
        const int hk = 1 + trial % 3, g = 1 + trial % 4, d = 8 * (1 + trial % 3), m = 1 + int(rng() % 40);
        FlatKvCache cache(1, hk, d, d, type);
        std::vector<std::vector<int32_t>> keep(static_cast<size_t>(hk));
        const int32_t n = 50 + int32_t(rng() % 200);
        std::vector<float> k(size_t(n) * size_t(hk * d)), v(k.size(), 0.0f);
        std::vector<int32_t> pos(static_cast<size_t>(n));
        for (float& x : k) x = nd(rng);
        for (int32_t t = 0; t < n; t++) pos[size_t(t)] = t;
        cache.reserve(0, n, 0);
        cache.append(0, k.data(), v.data(), pos.data(), n);
        for (int h = 0; h < hk; h++)  // ragged heads, every one ending with the m re-read entries
          for (int32_t t = 0; t < n; t++)
            if (t >= n - m || rng() % (2 + h) != 0) keep[size_t(h)].push_back(t);
        cache.compact(0, keep, 0);
        std::vector<float> q(size_t(m) * size_t(hk * g * d));
        for (float& x : q) x = nd(rng);
        std::unique_ptr<backend::KvStore> store = be.kv_store_from_host(std::move(cache));
        std::vector<std::vector<float>> fast(static_cast<size_t>(hk)), slow;
        for (int h = 0; h < hk; h++) fast[size_t(h)].assign(keep[size_t(h)].size() - size_t(m), 0.0f);
        slow = fast;
        be.watch_attention(q.data(), *store, 0, m, hk * g, d, fold, fast);
        be.backend::Backend::watch_attention(q.data(), *store, 0, m, hk * g, d, fold, slow);
        std::vector<std::vector<double>> want(slow.size());
        for (size_t h = 0; h < slow.size(); h++) want[h].assign(slow[h].begin(), slow[h].end());
        char what[96];
        std::snprintf(what, sizeof what, "attention watch (%s), %s, Hk %d, G %d, d %d, m %d",
                      fold == Fold::Max ? "max" : "sum", kv_type_name(type), hk, g, d, m);
        expect_near(what, fast, want, fold == Fold::Max ? 2e-5 : 2e-5 * double(m * g));
      }
}

// The global schedule: two layers of one head, 5 entries, window 1, 2 selectable per head on average. Layer 0's
// scores beat layer 1's, so one ranking over both gives layer 0 three and layer 1 one; flat gives two each.
void global_case(ThreadPool& pool) {
  for (const char* method : {"snapkv-global", "snapkv"}) {
    kv::CompressOptions o;
    o.method = kv::parse_method(method);
    o.window = 1, o.budget_tokens = 3;
    kv::WindowShape s;
    s.n_head = 1, s.n_head_kv = 1, s.head_dim = 1, s.head_dim_v = 1, s.L = 5;
    kv::Compressor comp(o, s, 2, 4, 4, "f32");
    comp.begin_chunk(0, 5, 0);
    const std::vector<std::vector<float>> scores[2] = {{{0.9f, 0.8f, 0.7f, 0.1f}}, {{0.2f, 0.15f, 0.05f, 0.01f}}};
    const kv::EntryReader none = [](int, float*) {};
    for (int l = 0; l < 2; l++) {
      kv::WindowScores ws;
      ws.score = scores[l];
      ws.attn = {{0.2f, 0.2f, 0.2f, 0.2f, 0.2f}};
      comp.score_layer(pool, l, {5}, ws, 0, none, none);
    }
    const bool global = std::string(method) == "snapkv-global";
    const std::vector<std::vector<int32_t>> want[2] = {global ? std::vector<std::vector<int32_t>>{{0, 1, 2, 4}}
                                                              : std::vector<std::vector<int32_t>>{{0, 1, 4}},
                                                       global ? std::vector<std::vector<int32_t>>{{0, 4}}
                                                              : std::vector<std::vector<int32_t>>{{0, 1, 4}}};
    for (int l = 0; l < 2; l++) {
      const std::vector<std::vector<int32_t>> keep = comp.plan_layer(pool, l, none, none);
      const bool ok = keep == want[l];
      failures += !ok;
      std::printf("%s %s layer %d keeps %zu entries\n", ok ? "ok" : "FAIL", method, l, keep[0].size());
    }
  }
}

// A chunked read's budget, one KV head, a window of 1, 20 tokens in chunks of 5, B = 10 per head (b = 9). At a
// ratio (0.5) the budget grows with the read: ceil(9 · read / 20) + 1 = 4, 6, 8, 10 entries after each chunk;
// a budget of 10 tokens per head is a cap from the first chunk: 5, 10, 10, 10. The global schedule shares the
// grown budget between its two layers: 8, 12, 16, 20 entries in all.
void chunk_budget_case(ThreadPool& pool) {
  const kv::EntryReader none = [](int, float*) {};
  struct Case {
    const char* method;
    double ratio;
    int32_t tokens;
    int layers;
    std::vector<int32_t> want;  // entries kept after each chunk, summed over the layers
  };
  for (const Case& c : {Case{"snapkv", 0.5, 0, 1, {4, 6, 8, 10}}, Case{"snapkv", 0, 10, 1, {5, 10, 10, 10}},
                        Case{"snapkv-global", 0.5, 0, 2, {8, 12, 16, 20}}}) {
    kv::CompressOptions o;
    o.method = kv::parse_method(c.method);
    o.window = 1, o.budget_ratio = c.ratio, o.budget_tokens = c.tokens;
    kv::WindowShape s;
    s.n_head = 1, s.n_head_kv = 1, s.head_dim = 1, s.head_dim_v = 1, s.L = 20;
    kv::Compressor comp(o, s, c.layers, 4, 4, "f32");
    std::vector<int32_t> held(size_t(c.layers), 0), got;
    for (int32_t first = 0; first < 20; first += 5) {
      comp.begin_chunk(first, 5, first);
      for (int l = 0; l < c.layers; l++) {
        const int32_t n = held[size_t(l)] + 5;
        kv::WindowScores ws;
        ws.attn = {std::vector<float>(size_t(n), 1.0f / float(n))};
        ws.score = {std::vector<float>(size_t(n - 1))};
        for (int32_t j = 0; j < n - 1; j++) ws.score[0][size_t(j)] = float(l + 1) * float(j + 1) / float(n);
        comp.score_layer(pool, l, {n}, ws, 0, none, none);
      }
      int32_t kept = 0;
      for (int l = 0; l < c.layers; l++)
        kept += held[size_t(l)] = int32_t(comp.plan_layer(pool, l, none, none)[0].size());
      got.push_back(kept);
    }
    const bool ok = got == c.want;
    failures += !ok;
    std::printf("%s %s, budget %g: kept after each chunk %d, %d, %d, %d\n", ok ? "ok" : "FAIL", c.method,
                c.tokens ? double(c.tokens) : c.ratio, got[0], got[1], got[2], got[3]);
  }
}

}  // namespace

int main() {
  ThreadPool pool(2);
  std::unique_ptr<backend::Backend> be = backend::make_cpu_backend(pool, false);
  scorer_cases(pool);
  reread_case(pool, *be);
  reread_kernel_case(pool, *be);
  citation_case(*be);
  global_case(pool);
  chunk_budget_case(pool);
  std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
