#include "forward/rebase.h"

#include <algorithm>
#include <vector>

#include "backend/cpu-ops.h"

namespace folio::forward {

namespace {

backend::RopeParams rope_of(const HParams& hp) {
  backend::RopeParams rope;
  rope.rope_dim = hp.rope_dim;
  rope.neox = hp.rope_type == RopeType::Neox;
  rope.base = hp.rope_base;
  rope.freq_scale = hp.rope_freq_scale;
  return rope;
}

// Gives head g of layer l (its entries at positions `pos`) the positions `next`, its keys rotated by the change.
void move_keys(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool, int l, int g,
               const std::vector<int32_t>& pos, const std::vector<int32_t>& next) {
  const int32_t n = int32_t(pos.size());
  std::vector<int32_t> delta(static_cast<size_t>(n));
  bool moves = false;
  for (int32_t i = 0; i < n; i++) {
    delta[size_t(i)] = next[size_t(i)] - pos[size_t(i)];
    moves = moves || delta[size_t(i)] != 0;
  }
  if (!moves) return;
  std::vector<float> k(size_t(n) * size_t(hp.head_dim));
  kv.read_k(l, g, n, k.data());  // k [n, head_dim]
  cpu::rope(pool, k.data(), n, 1, hp.head_dim, delta.data(), rope_of(hp), freq_factors);
  kv.rewrite_keys(l, g, n, k.data(), next.data());
}

}  // namespace

int32_t rebase_positions(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool,
                         int32_t max_frontier) {
  int32_t R = 0;
  for (int l = 0; l < kv.n_layer(); l++)
    for (int g = 0; g < kv.n_head_kv(); g++) R = std::max(R, kv.len(l, g));
  R = std::min(R, std::max(max_frontier, 0));
  std::vector<int32_t> pos, next;
  for (int l = 0; l < kv.n_layer(); l++)
    for (int g = 0; g < kv.n_head_kv(); g++) {
      const int32_t n = kv.len(l, g);
      pos.resize(size_t(n));
      next.resize(size_t(n));
      kv.read_pos(l, g, n, pos.data());
      for (int32_t i = 0; i < n; i++) next[size_t(i)] = std::max(R - n + i, 0);
      move_keys(kv, hp, freq_factors, pool, l, g, pos, next);
    }
  return R;
}

void forget_positions(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool,
                      int32_t from, int32_t to) {
  std::vector<int32_t> pos, next;
  for (int l = 0; l < kv.n_layer(); l++) {
    std::vector<std::vector<int32_t>> keep(static_cast<size_t>(kv.n_head_kv()));
    bool drops = false;
    for (int g = 0; g < kv.n_head_kv(); g++) {
      pos.resize(size_t(kv.len(l, g)));
      kv.read_pos(l, g, kv.len(l, g), pos.data());
      for (int32_t i = 0; i < int32_t(pos.size()); i++)
        if (pos[size_t(i)] < from || pos[size_t(i)] >= to) keep[size_t(g)].push_back(i);
      drops = drops || keep[size_t(g)].size() < pos.size();
    }
    if (drops) kv.compact(l, keep, FlatKvCache::kSpare);
    for (int g = 0; g < kv.n_head_kv(); g++) {
      pos.resize(size_t(kv.len(l, g)));
      kv.read_pos(l, g, kv.len(l, g), pos.data());
      next = pos;
      for (int32_t& p : next)
        if (p >= to) p -= to - from;
      move_keys(kv, hp, freq_factors, pool, l, g, pos, next);
    }
  }
}

}  // namespace folio::forward
