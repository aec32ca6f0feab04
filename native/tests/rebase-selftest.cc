// Re-based, forgotten and compressed spans of positions (forward/rebase.h) against keys rotated straight to their
// new positions: a key cached after RoPE at position p and rotated by the angle of p' − p must equal the key rotated
// to p' directly (RoPE's angle is linear in the position). Random caches whose heads keep different, gappy subsets of
// the tokens (as after compression), F32 and F16 entries, normal and NeoX pairs, partial rotary dims, linear scaling
// and per-pair frequency factors. A compressed span keeps exactly what a slow, obvious selection keeps (the best
// scores of a layer taken one by one, passing over a head once it holds the span's kept positions), every other
// entry stays byte for byte but for the keys of those that move, and keeping nothing is forgetting.
//   rebase-selftest [SEED]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backend/cpu-backend.h"
#include "backend/cpu-ops.h"
#include "forward/rebase.h"

using namespace folio;

namespace {

// The reference selection for top_of_span: scores [head][the head's span entries]; the span's entries of every
// head taken best first (ties to the lower entry, then the lower head), a head passed over once it holds `cap`,
// until k are taken; then a head that has span entries but won none keeps its best (when k > 0).
std::vector<std::vector<int32_t>> slow_capped_top(const std::vector<std::vector<float>>& scores, int64_t k,
                                                  int32_t cap) {
  struct Pair {
    float s;
    int32_t j;
    int h;
  };
  std::vector<Pair> all;
  for (int h = 0; h < int(scores.size()); h++)
    for (int32_t j = 0; j < int32_t(scores[size_t(h)].size()); j++) all.push_back({scores[size_t(h)][size_t(j)], j, h});
  std::sort(all.begin(), all.end(), [](const Pair& a, const Pair& b) {
    return a.s != b.s ? a.s > b.s : a.j != b.j ? a.j < b.j : a.h < b.h;
  });
  std::vector<std::vector<int32_t>> keep(scores.size());
  int64_t taken = 0;
  for (const Pair& p : all) {
    if (taken == k) break;
    if (int32_t(keep[size_t(p.h)].size()) == cap) continue;
    keep[size_t(p.h)].push_back(p.j);
    taken++;
  }
  for (size_t h = 0; h < scores.size(); h++) {
    if (k > 0 && keep[h].empty() && !scores[h].empty())
      keep[h].push_back(int32_t(std::max_element(scores[h].begin(), scores[h].end()) - scores[h].begin()));
    std::sort(keep[h].begin(), keep[h].end());
  }
  return keep;
}

}  // namespace

int main(int argc, char** argv) {
  std::mt19937 rng(argc > 1 ? unsigned(std::atoi(argv[1])) : 1u);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ThreadPool pool(2);
  std::unique_ptr<backend::Backend> be = backend::make_cpu_backend(pool, false);
  int failures = 0, cases = 0;
  for (KvType type : {KvType::F32, KvType::F16})
    for (int trial = 0; trial < 32; trial++) {
      HParams hp;
      hp.n_layer = 1 + int(rng() % 3);
      hp.n_head_kv = 1 + int(rng() % 4);
      hp.head_dim = 2 * (1 + int(rng() % 40));
      hp.head_dim_v = hp.head_dim;
      hp.rope_dim = trial % 3 == 0 ? 2 * (1 + int(rng() % (hp.head_dim / 2))) : hp.head_dim;
      hp.rope_type = trial % 2 ? RopeType::Neox : RopeType::Norm;
      hp.rope_base = trial % 4 == 1 ? 500000.0f : 10000.0f;
      hp.rope_freq_scale = trial % 5 == 2 ? 0.25f : 1.0f;
      std::vector<float> factors(size_t(hp.rope_dim / 2));
      for (float& f : factors) f = 1.0f + float(rng() % 8);
      const float* ff = trial % 4 == 3 ? factors.data() : nullptr;
      backend::RopeParams rope;
      rope.rope_dim = hp.rope_dim, rope.neox = hp.rope_type == RopeType::Neox;
      rope.base = hp.rope_base, rope.freq_scale = hp.rope_freq_scale;

      // n tokens at gappy positions; every head of every layer then keeps its own random subset. Half the
      // compressed spans are as a conversation's turns are: every position, every head holding all of them
      // (there the positions, not the entries, bound what a head keeps).
      const bool dense = trial % 8 == 3;
      const int32_t n = 20 + int32_t(rng() % 300);
      std::vector<int32_t> pos(static_cast<size_t>(n));
      int32_t p = int32_t(rng() % 50);
      for (auto& x : pos) x = p, p += 1 + (dense ? 0 : int32_t(rng() % 9));
      const int Hk = hp.n_head_kv, D = hp.head_dim;
      // raw[l][t, g·D ..]: the keys before RoPE
      std::vector<std::vector<float>> raw(size_t(hp.n_layer), std::vector<float>(size_t(n) * size_t(Hk * D)));
      FlatKvCache cache(hp.n_layer, Hk, D, D, type);
      std::vector<std::vector<std::vector<int32_t>>> kept(size_t(hp.n_layer));
      for (int l = 0; l < hp.n_layer; l++) {
        std::vector<float>& k0 = raw[size_t(l)];
        for (float& x : k0) x = nd(rng);
        std::vector<float> k = k0, v(k0.size());
        for (float& x : v) x = nd(rng);
        cpu::rope(pool, k.data(), n, Hk, D, pos.data(), rope, ff);
        cache.reserve(l, n, 0);
        cache.append(l, k.data(), v.data(), pos.data(), n);
        kept[size_t(l)].resize(size_t(Hk));
        for (int g = 0; g < Hk; g++)
          for (int32_t t = 0; t < n; t++)
            if (dense || rng() % 3 != 0 || t == n - 1) kept[size_t(l)][size_t(g)].push_back(t);
        cache.compact(l, kept[size_t(l)], 0);
      }
      // A quarter of the trials compress a span of positions by score (a conversation's older turns).
      if (trial % 4 == 3) {
        std::unique_ptr<backend::KvStore> store = be->kv_store_from_host(std::move(cache));
        const int32_t from = pos[size_t(n / 3)], to = pos[size_t(2 * n / 3)];
        const double ratios[] = {0.25, 0.05, 0.5, 0.0, 0.1, 1.0, 0.3, 0.0};  // dense, gappy, dense, ...
        const double ratio = ratios[trial / 4];
        // scores [layer][head][entry], distinct (ties are the reference's business, not this test's)
        std::vector<std::vector<std::vector<float>>> scores(size_t(hp.n_layer));
        std::uniform_real_distribution<float> ud(0.0f, 1.0f);
        for (int l = 0; l < hp.n_layer; l++)
          for (int g = 0; g < Hk; g++) {
            scores[size_t(l)].emplace_back(size_t(store->len(l, g)));
            for (float& x : scores[size_t(l)].back()) x = ud(rng);
          }
        // What every head holds before: keys, values, positions.
        std::vector<std::vector<std::vector<float>>> k_before(size_t(hp.n_layer)), v_before(size_t(hp.n_layer));
        std::vector<std::vector<std::vector<int32_t>>> p_before(size_t(hp.n_layer));
        for (int l = 0; l < hp.n_layer; l++)
          for (int g = 0; g < Hk; g++) {
            const int32_t m = store->len(l, g);
            k_before[size_t(l)].emplace_back(size_t(m) * size_t(D));
            v_before[size_t(l)].emplace_back(size_t(m) * size_t(D));
            p_before[size_t(l)].emplace_back(size_t(m));
            store->read_k(l, g, m, k_before[size_t(l)].back().data());
            store->read_v(l, g, m, v_before[size_t(l)].back().data());
            store->read_pos(l, g, m, p_before[size_t(l)].back().data());
          }
        std::unique_ptr<backend::KvStore> forgotten = store->clone();
        const forward::SpanKeep keep = forward::top_of_span(*store, from, to, ratio, scores);
        const int32_t R = forward::squeeze_span(*store, hp, ff, pool, from, to, keep);
        bool ok = true;
        const char* what = "ok";
        auto check = [&](bool c, const char* why) {
          if (!c && ok) ok = false, what = why;
        };
        // The reference: which entries, R, the positions, the bytes.
        const int32_t cap = int32_t(std::ceil(ratio * double(to - from) - 1e-9));
        int32_t want_R = 0;
        double worst = 0;
        for (int l = 0; l < hp.n_layer; l++) {
          std::vector<std::vector<float>> rows(static_cast<size_t>(Hk));
          std::vector<std::vector<int32_t>> span_idx(static_cast<size_t>(Hk));  // [Hk] entry index of each span entry
          int64_t entries = 0;
          for (int g = 0; g < Hk; g++) {
            const std::vector<int32_t>& p0 = p_before[size_t(l)][size_t(g)];
            for (int32_t i = 0; i < int32_t(p0.size()); i++)
              if (p0[size_t(i)] >= from && p0[size_t(i)] < to)
                rows[size_t(g)].push_back(scores[size_t(l)][size_t(g)][size_t(i)]), span_idx[size_t(g)].push_back(i);
            entries += int64_t(rows[size_t(g)].size());
          }
          const auto want = slow_capped_top(rows, int64_t(std::ceil(ratio * double(entries) - 1e-9)), cap);
          check(want == keep[size_t(l)], "selection differs from the reference");
          for (const auto& h : want) want_R = std::max(want_R, int32_t(h.size()));
          if (!ok) continue;
          for (int g = 0; g < Hk; g++) {
            const std::vector<int32_t>& p0 = p_before[size_t(l)][size_t(g)];
            std::vector<int32_t> idx;  // the entries the head keeps, in order
            for (int32_t i = 0; i < int32_t(p0.size()); i++)
              if (p0[size_t(i)] < from || p0[size_t(i)] >= to) idx.push_back(i);
            for (int32_t j : want[size_t(g)]) idx.push_back(span_idx[size_t(g)][size_t(j)]);
            std::sort(idx.begin(), idx.end());
            const int32_t m = int32_t(idx.size());
            check(store->len(l, g) == m, "wrong number of entries");
            if (!ok) break;
            std::vector<float> kk(size_t(m) * size_t(D)), vv(size_t(m) * size_t(D)), want_k(size_t(m) * size_t(D));
            std::vector<int32_t> pp(static_cast<size_t>(m)), want_pos(static_cast<size_t>(m));
            store->read_k(l, g, m, kk.data());
            store->read_v(l, g, m, vv.data());
            store->read_pos(l, g, m, pp.data());
            const int32_t n_span = int32_t(want[size_t(g)].size());
            int32_t s = 0;
            for (int32_t i = 0; i < m; i++) {
              const int32_t e = idx[size_t(i)], p0e = p0[size_t(e)];
              want_pos[size_t(i)] = p0e < from ? p0e : p0e >= to ? p0e - (to - from - R) : from + R - n_span + s++;
              const float* kb = k_before[size_t(l)][size_t(g)].data() + int64_t(e) * D;
              const float* vb = v_before[size_t(l)][size_t(g)].data() + int64_t(e) * D;
              check(std::equal(vb, vb + D, vv.begin() + int64_t(i) * D), "a value changed");
              if (p0e < from)
                check(std::equal(kb, kb + D, kk.begin() + int64_t(i) * D), "a key before the span changed");
              // the key rotated straight from the raw one: entry e of the head is the token kept[l][g][e]
              const float* src = raw[size_t(l)].data() + (int64_t(kept[size_t(l)][size_t(g)][size_t(e)]) * Hk + g) * D;
              std::copy(src, src + D, want_k.begin() + int64_t(i) * D);
            }
            check(pp == want_pos, "wrong positions");
            cpu::rope(pool, want_k.data(), m, 1, D, want_pos.data(), rope, ff);
            for (size_t i = 0; i < want_k.size(); i++) worst = std::max(worst, double(std::fabs(kk[i] - want_k[i])));
          }
        }
        check(R == want_R, "wrong frontier R");
        // Keeping nothing is forgetting: the very same cache.
        if (ok && ratio == 0) {
          forward::forget_positions(*forgotten, hp, ff, pool, from, to);
          for (int l = 0; l < hp.n_layer && ok; l++)
            for (int g = 0; g < Hk && ok; g++) {
              const int32_t m = store->len(l, g);
              check(forgotten->len(l, g) == m, "keep nothing is not forget: lengths");
              if (!ok) break;
              std::vector<float> a(size_t(m) * size_t(D)), b(a.size());
              std::vector<int32_t> pa(static_cast<size_t>(m)), pb(pa.size());
              store->read_k(l, g, m, a.data());
              forgotten->read_k(l, g, m, b.data());
              store->read_pos(l, g, m, pa.data());
              forgotten->read_pos(l, g, m, pb.data());
              check(a == b && pa == pb, "keep nothing is not forget");
            }
        }
        const double tol = type == KvType::F32 ? 2e-3 : 1.5e-2;
        cases++;
        if (!ok || !(worst <= tol)) {
          failures++;
          std::printf("FAIL compress %s trial %d: [%d, %d) ratio %g R=%d: %s, max |error| %.3g (tol %.1g)\n",
                      kv_type_name(type), trial, from, to, ratio, R, what, worst, tol);
        }
        continue;
      }
      // A quarter forget a range of positions instead (a conversation's oldest turns): the entries in it go,
      // those after it move back by its length, the others stay.
      if (trial % 4 == 1) {
        std::unique_ptr<backend::KvStore> store = be->kv_store_from_host(std::move(cache));
        const int32_t from = pos[size_t(n / 3)], to = pos[size_t(2 * n / 3)];
        forward::forget_positions(*store, hp, ff, pool, from, to);
        double worst = 0;
        bool ok = true;
        for (int l = 0; l < hp.n_layer; l++)
          for (int g = 0; g < Hk; g++) {
            std::vector<int32_t> idx, want_pos;
            for (int32_t t : kept[size_t(l)][size_t(g)])
              if (pos[size_t(t)] < from || pos[size_t(t)] >= to)
                idx.push_back(t),
                    want_pos.push_back(pos[size_t(t)] >= to ? pos[size_t(t)] - (to - from) : pos[size_t(t)]);
            const int32_t m = int32_t(idx.size());
            ok = ok && store->len(l, g) == m;
            if (!ok) continue;
            std::vector<float> got(size_t(m) * size_t(D)), want(size_t(m) * size_t(D));
            std::vector<int32_t> got_pos(static_cast<size_t>(m));
            store->read_k(l, g, m, got.data());
            store->read_pos(l, g, m, got_pos.data());
            for (int32_t i = 0; i < m; i++) {
              const float* src = raw[size_t(l)].data() + (int64_t(idx[size_t(i)]) * Hk + g) * D;
              std::copy(src, src + D, want.begin() + int64_t(i) * D);
            }
            cpu::rope(pool, want.data(), m, 1, D, want_pos.data(), rope, ff);
            ok = ok && got_pos == want_pos;
            for (size_t i = 0; i < want.size(); i++) worst = std::max(worst, double(std::fabs(got[i] - want[i])));
          }
        const double tol = type == KvType::F32 ? 2e-3 : 1.5e-2;
        cases++;
        if (!ok || !(worst <= tol)) {
          failures++;
          std::printf("FAIL forget %s trial %d: [%d, %d) %s, max |error| %.3g (tol %.1g)\n", kv_type_name(type), trial,
                      from, to, ok ? "positions ok" : "wrong entries or positions", worst, tol);
        }
        continue;
      }
      std::unique_ptr<backend::KvStore> store = be->kv_store_from_host(std::move(cache));
      int32_t longest = 0;
      for (const auto& layer : kept)
        for (const auto& head : layer) longest = std::max(longest, int32_t(head.size()));
      // Every third trial caps the frontier below the longest head: its oldest entries share position 0.
      const int32_t cap = trial % 3 == 2 ? longest / 2 : 1 << 30;
      const int32_t R = forward::rebase_positions(*store, hp, ff, pool, cap);
      const int32_t want_R = std::min(longest, cap);
      double worst = 0;
      bool positions_ok = R == want_R;
      for (int l = 0; l < hp.n_layer; l++)
        for (int g = 0; g < Hk; g++) {
          const std::vector<int32_t>& idx = kept[size_t(l)][size_t(g)];
          const int32_t m = int32_t(idx.size());
          std::vector<float> got(size_t(m) * size_t(D)), want(size_t(m) * size_t(D));
          std::vector<int32_t> got_pos(static_cast<size_t>(m)), new_pos(static_cast<size_t>(m));
          store->read_k(l, g, m, got.data());
          store->read_pos(l, g, m, got_pos.data());
          for (int32_t i = 0; i < m; i++) {
            new_pos[size_t(i)] = std::max(R - m + i, 0);
            const float* src = raw[size_t(l)].data() + (int64_t(idx[size_t(i)]) * Hk + g) * D;
            std::copy(src, src + D, want.begin() + int64_t(i) * D);
          }
          cpu::rope(pool, want.data(), m, 1, D, new_pos.data(), rope, ff);  // straight to the new positions
          positions_ok = positions_ok && got_pos == new_pos;
          for (size_t i = 0; i < want.size(); i++) worst = std::max(worst, double(std::fabs(got[i] - want[i])));
        }
      // Keys are ~N(0, 1): F32 entries differ by the float rounding of two angles; F16 entries were rounded
      // once before and once after the rotation (2^-11 relative each).
      const double tol = type == KvType::F32 ? 2e-3 : 1.5e-2;
      cases++;
      if (!positions_ok || !(worst <= tol)) {
        failures++;
        std::printf("FAIL %s trial %d: D=%d rope_dim=%d %s R=%d positions %s, max |error| %.3g (tol %.1g)\n",
                    kv_type_name(type), trial, D, hp.rope_dim, rope.neox ? "neox" : "norm", R,
                    positions_ok ? "ok" : "wrong", worst, tol);
      }
    }
  std::printf("rebase-selftest: %d of %d cases passed\n", cases - failures, cases);
  return failures ? 1 : 0;
}
