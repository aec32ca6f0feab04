#include "forward/rebase.h"

#include <algorithm>
#include <vector>

#include "backend/cpu-ops.h"

namespace folio::forward {

int32_t rebase_positions(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool,
                         int32_t max_frontier) {
  int32_t R = 0;
  for (int l = 0; l < kv.n_layer(); l++)
    for (int g = 0; g < kv.n_head_kv(); g++) R = std::max(R, kv.len(l, g));
  R = std::min(R, std::max(max_frontier, 0));
  backend::RopeParams rope;
  rope.rope_dim = hp.rope_dim;
  rope.neox = hp.rope_type == RopeType::Neox;
  rope.base = hp.rope_base;
  rope.freq_scale = hp.rope_freq_scale;
  std::vector<float> k;
  std::vector<int32_t> pos, delta;
  for (int l = 0; l < kv.n_layer(); l++)
    for (int g = 0; g < kv.n_head_kv(); g++) {
      const int32_t n = kv.len(l, g);
      if (n == 0) continue;
      pos.resize(size_t(n));
      delta.resize(size_t(n));
      kv.read_pos(l, g, n, pos.data());
      bool moves = false;
      for (int32_t i = 0; i < n; i++) {
        const int32_t p = std::max(R - n + i, 0);
        delta[size_t(i)] = p - pos[size_t(i)];
        pos[size_t(i)] = p;
        moves = moves || delta[size_t(i)] != 0;
      }
      if (!moves) continue;
      k.resize(size_t(n) * size_t(hp.head_dim));
      kv.read_k(l, g, n, k.data());  // k [n, head_dim]
      cpu::rope(pool, k.data(), n, 1, hp.head_dim, delta.data(), rope, freq_factors);
      kv.rewrite_keys(l, g, n, k.data(), pos.data());
    }
  return R;
}

}  // namespace folio::forward
