// Re-based and forgotten positions (forward/rebase.h) against keys rotated straight to their new positions: a key
// cached after RoPE at position p and rotated by the angle of p' − p must equal the key rotated to p' directly (RoPE's
// angle is linear in the position). Random caches whose heads keep different, gappy subsets of the tokens (as after
// compression), F32 and F16 entries, normal and NeoX pairs, partial rotary dims, linear scaling and per-pair frequency
// factors.
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

int main(int argc, char** argv) {
  std::mt19937 rng(argc > 1 ? unsigned(std::atoi(argv[1])) : 1u);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ThreadPool pool(2);
  std::unique_ptr<backend::Backend> be = backend::make_cpu_backend(pool, false);
  int failures = 0, cases = 0;
  for (KvType type : {KvType::F32, KvType::F16})
    for (int trial = 0; trial < 24; trial++) {
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

      // n tokens at gappy positions; every head of every layer then keeps its own random subset.
      const int32_t n = 20 + int32_t(rng() % 300);
      std::vector<int32_t> pos(static_cast<size_t>(n));
      int32_t p = int32_t(rng() % 50);
      for (auto& x : pos) x = p, p += 1 + int32_t(rng() % 9);
      const int Hk = hp.n_head_kv, D = hp.head_dim;
      // raw[l][t, g·D ..]: the keys before RoPE
      std::vector<std::vector<float>> raw(size_t(hp.n_layer), std::vector<float>(size_t(n) * size_t(Hk * D)));
      FlatKvCache cache(hp.n_layer, Hk, D, D, type);
      std::vector<std::vector<std::vector<int32_t>>> kept(size_t(hp.n_layer));
      for (int l = 0; l < hp.n_layer; l++) {
        std::vector<float>& k0 = raw[size_t(l)];
        for (float& x : k0) x = nd(rng);
        std::vector<float> k = k0, v(k0.size(), 0.0f);
        cpu::rope(pool, k.data(), n, Hk, D, pos.data(), rope, ff);
        cache.reserve(l, n, 0);
        cache.append(l, k.data(), v.data(), pos.data(), n);
        kept[size_t(l)].resize(size_t(Hk));
        for (int g = 0; g < Hk; g++)
          for (int32_t t = 0; t < n; t++)
            if (rng() % 3 != 0 || t == n - 1) kept[size_t(l)][size_t(g)].push_back(t);
        cache.compact(l, kept[size_t(l)], 0);
      }
      // Half the trials forget a range of positions instead (a conversation's oldest turns): the entries in it
      // go, those after it move back by its length, the others stay.
      if (trial % 2 == 1) {
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
