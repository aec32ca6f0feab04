// The fast attention against the reference attention on random flat caches: F32, F16, Q8_0 and Q4_0 entries
// (the quantized ones also rotated, which the fast path undoes on its queries and outputs, the reference on
// every entry it reads; kv/hadamard.h), heads
// of different lengths (as after compression), awkward sizes, GQA, several queries appended at once, and
// the shapes of real models (head sizes 64 and 128, groups of 4 and 8) with long caches, where the fast
// path's register blocks are full. Two trials in three slide a window over the keys (backend/sliding-window.h)
// of a random width, on positions with gaps (as a compressed cache holds), so that windows start inside a
// block and a query's window may hold fewer entries than its width.
//   attention-selftest [SEED]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backend/cpu-ops.h"
#include "kv/flat-cache.h"
#include "kv/hadamard.h"
#include "model/hparams.h"
#include "quant/quant.h"

using namespace folio;

int main(int argc, char** argv) {
  std::mt19937 rng(argc > 1 ? unsigned(std::atoi(argv[1])) : 1u);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ThreadPool pool(2);
  cpu::Scratch scratch;
  int failures = 0, cases = 0;
  const KvFormat formats[] = {KvType::F32,
                              KvType::F16,
                              KvType::Q8_0,
                              KvType::Q4_0,
                              KvFormat(KvType::Q8_0, KvType::Q4_0, true),
                              KvFormat(KvType::Q4_0, KvType::Q4_0, true)};
  for (const KvFormat& type : formats)
    for (int trial = 0; trial < 44; trial++) {
      HParams hp;
      const bool real = trial >= 40;  // Llama-3.2-1B's heads (64, G = 4), then Llama-3.1-8B's (128, G = 8)
      hp.n_head_kv = real ? 2 : 1 + int(rng() % 4);
      hp.n_head = hp.n_head_kv * (real ? (trial % 2 ? 8 : 4) : 1 + int(rng() % 4));
      // Head sizes are even, as RoPE makes them (Q4_0's blocks pair their halves).
      hp.head_dim = real ? (trial % 2 ? 128 : 64) : 2 + 2 * int(rng() % 35);
      hp.head_dim_v = real || trial % 3 ? hp.head_dim : 2 + 2 * int(rng() % 35);
      const int32_t m = real ? 37 + int32_t(rng() % 40)
                             : 1 + int32_t(rng() % 60);  // queries appended now (tiles of 128 rows: several)
      FlatKvCache cache(1, hp.n_head_kv, hp.head_dim, hp.head_dim_v, type);
      // Older entries: a different number per head, then the m new tokens in every head.
      std::vector<int32_t> before(size_t(hp.n_head_kv));
      std::vector<int32_t> caps(size_t(hp.n_head_kv));
      for (int g = 0; g < hp.n_head_kv; g++)
        before[size_t(g)] = int32_t(rng() % (real ? 600 : 200)), caps[size_t(g)] = before[size_t(g)] + m;
      cache.reserve_heads(0, caps);
      // the new tokens' first position: after every head's older entries (1 to 3 positions apart)
      const int32_t p_new = 3 * (real ? 600 : 200);
      const int32_t n_swa = trial % 3 == 0 ? 0 : 1 + int32_t(rng() % uint32_t(real ? 700 : 300));
      for (int g = 0; g < hp.n_head_kv; g++) {
        const int32_t n = before[size_t(g)];
        std::vector<float> k(size_t(n) * size_t(hp.head_dim)), v(size_t(n) * size_t(hp.head_dim_v));
        for (auto& x : k) x = nd(rng);
        for (auto& x : v) x = nd(rng);
        std::vector<uint8_t> kb(size_t(n) * cache.k_entry_bytes()), vb(size_t(n) * cache.v_entry_bytes());
        std::vector<int32_t> pos(static_cast<size_t>(n));
        for (int32_t j = 0, p = p_new - 3 * n - 1; j < n; j++) pos[size_t(j)] = p += 1 + int32_t(rng() % 3);
        // store through a one-head append so the element conversion is the cache's own
        FlatKvCache tmp(1, 1, hp.head_dim, hp.head_dim_v, type);
        tmp.reserve(0, n, 0);
        tmp.append(0, k.data(), v.data(), pos.data(), n);
        cache.append_raw(0, g, pos.data(), tmp.layer(0).k.data(), tmp.layer(0).v.data(), n);
      }
      std::vector<float> k(size_t(m) * size_t(hp.k_width())), v(size_t(m) * size_t(hp.v_width())),
          q(size_t(m) * size_t(hp.q_width()));
      for (auto& x : k) x = nd(rng);
      for (auto& x : v) x = nd(rng);
      for (auto& x : q) x = 2.0f * nd(rng);
      std::vector<int32_t> pos(static_cast<size_t>(m));
      for (int32_t t = 0; t < m; t++) pos[size_t(t)] = p_new + t;
      cache.append(0, k.data(), v.data(), pos.data(), m);
      std::vector<float> fast(size_t(m) * size_t(hp.n_head) * size_t(hp.head_dim_v)), ref(fast.size());
      cpu::attention(pool, scratch, q.data(), cache, 0, m, hp.n_head, n_swa, fast.data());
      cpu::attention_reference(pool, scratch, q.data(), cache, 0, m, hp.n_head, n_swa, ref.data());
      // Over quantized keys of whole blocks, a tile of fewer than 16 rows (decode; a last short tile) scores with
      // the query in Q8_0 as well (integer dot products): its rows are checked against the reference run on
      // those queries, the rotated query quantized to Q8_0 and rotated back (q8_ref), the other rows against
      // the reference itself. Which path a row took is the fast path's business: a row passes if it matches
      // either. Outputs are convex combinations of N(0,1) values: float reordering gives ~1e-6; an indexing
      // error, or the wrong query, moves them by ~1e-2 (the 8-bit query's own effect) to ~1.
      std::vector<float> q8_ref;
      if (kv_type_quantized(type.k) && hp.head_dim % 32 == 0) {
        std::vector<float> q8(q);
        std::vector<uint8_t> blocks(size_t(hp.head_dim / 32) * 34);
        const quant::Kernels& k8 = quant::kernels(TensorType::Q8_0);
        for (size_t r = 0; r < q8.size() / size_t(hp.head_dim); r++) {
          float* row = q8.data() + r * size_t(hp.head_dim);
          if (type.rotate_k()) kv::hadamard(row, hp.head_dim, 1);
          k8.quantize_row(row, blocks.data(), hp.head_dim);
          k8.dequantize_row(blocks.data(), row, hp.head_dim);
          if (type.rotate_k()) kv::hadamard(row, hp.head_dim, 1);
        }
        q8_ref.resize(fast.size());
        cpu::attention_reference(pool, scratch, q8.data(), cache, 0, m, hp.n_head, n_swa, q8_ref.data());
      }
      double max_err = 0;
      for (size_t r = 0; r < fast.size() / size_t(hp.head_dim_v); r++) {
        double e = 0, e8 = 0;
        for (size_t i = r * size_t(hp.head_dim_v); i < (r + 1) * size_t(hp.head_dim_v); i++) {
          e = std::max(e, double(std::fabs(fast[i] - ref[i])));
          if (!q8_ref.empty()) e8 = std::max(e8, double(std::fabs(fast[i] - q8_ref[i])));
        }
        max_err = std::max(max_err, q8_ref.empty() ? e : std::min(e, e8));
      }
      cases++;
      const double tol = 1e-5;
      if (max_err > tol) {
        failures++;
        std::printf("FAIL %s Hk=%d H=%d D=%d Dv=%d m=%d n_swa=%d: max |fast - reference| = %g\n",
                    kv_format_name(type).c_str(), hp.n_head_kv, hp.n_head, hp.head_dim, hp.head_dim_v, m, n_swa,
                    max_err);
      }
    }
  std::printf("attention-selftest: %d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
