#include "forward/rebase.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu-ops.h"
#include "core/error.h"
#include "forward/forward.h"
#include "kv/allocator.h"

namespace folio::forward {

namespace {

// Layer l's rotation, a pure one: the keys already carry the forward pass's mscale.
backend::RopeParams rope_of(const HParams& hp, int l) {
  backend::RopeParams rope = layer_rope(hp, l);
  rope.mscale = 1.0f;
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
  rotate_keys(hp, freq_factors, pool, l, k.data(), n, delta.data());
  kv.rewrite_keys(l, g, n, k.data(), next.data());
}

// Entry i of n that end just before position `end` (the right-aligned positions of a re-based head or span).
int32_t right_aligned(int32_t i, int32_t n, int32_t end) { return end - n + i; }

}  // namespace

void rotate_keys(const HParams& hp, const float* freq_factors, ThreadPool& pool, int l, float* k, int32_t n,
                 const int32_t* delta) {
  cpu::rope(pool, k, n, 1, hp.head_dim, delta, rope_of(hp, l), freq_factors);
}

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
      for (int32_t i = 0; i < n; i++) next[size_t(i)] = std::max(right_aligned(i, n, R), 0);
      move_keys(kv, hp, freq_factors, pool, l, g, pos, next);
    }
  return R;
}

int32_t squeeze_span(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool, int32_t from,
                     int32_t to, const SpanKeep& keep) {
  const int Hk = kv.n_head_kv();
  if (int(keep.size()) != kv.n_layer()) fail("INTERNAL", "squeeze_span: a selection for every layer is needed");
  int32_t R = 0;
  for (const auto& layer : keep) {
    if (int(layer.size()) != Hk) fail("INTERNAL", "squeeze_span: a selection for every head is needed");
    for (const auto& head : layer) R = std::max(R, int32_t(head.size()));
  }
  const int32_t shift = to - from - R;
  std::vector<int32_t> pos, next;
  for (int l = 0; l < kv.n_layer(); l++) {
    std::vector<std::vector<int32_t>> entries(static_cast<size_t>(Hk));  // [Hk] entry indices each head keeps
    bool drops = false;
    for (int g = 0; g < Hk; g++) {
      const std::vector<int32_t>& ks = keep[size_t(l)][size_t(g)];
      pos.resize(size_t(kv.len(l, g)));
      kv.read_pos(l, g, kv.len(l, g), pos.data());
      size_t k = 0;
      int32_t j = 0;  // the span's entries of this head, counted
      for (int32_t i = 0; i < int32_t(pos.size()); i++) {
        const bool in_span = pos[size_t(i)] >= from && pos[size_t(i)] < to;
        bool kept = !in_span;
        if (in_span && k < ks.size() && ks[k] == j) kept = true, k++;
        if (kept) entries[size_t(g)].push_back(i);
        j += in_span;
      }
      if (k != ks.size()) fail("INTERNAL", "squeeze_span: a kept entry outside the span");
      drops = drops || entries[size_t(g)].size() < pos.size();
    }
    if (drops) kv.compact(l, entries, FlatKvCache::kSpare);
    for (int g = 0; g < Hk; g++) {
      const int32_t n_span = int32_t(keep[size_t(l)][size_t(g)].size());
      pos.resize(size_t(kv.len(l, g)));
      kv.read_pos(l, g, kv.len(l, g), pos.data());
      next = pos;
      int32_t k = 0;
      for (int32_t& p : next)
        if (p >= to) p -= shift;
        else if (p >= from) p = right_aligned(k++, n_span, from + R);
      move_keys(kv, hp, freq_factors, pool, l, g, pos, next);
    }
  }
  return R;
}

void forget_positions(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool,
                      int32_t from, int32_t to) {
  const SpanKeep nothing(size_t(kv.n_layer()), std::vector<std::vector<int32_t>>(size_t(kv.n_head_kv())));
  squeeze_span(kv, hp, freq_factors, pool, from, to, nothing);
}

int32_t pack_span(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool, int32_t from,
                  int32_t to) {
  SpanKeep all(size_t(kv.n_layer()), std::vector<std::vector<int32_t>>(size_t(kv.n_head_kv())));
  std::vector<int32_t> pos;
  for (int l = 0; l < kv.n_layer(); l++)
    for (int g = 0; g < kv.n_head_kv(); g++) {
      pos.resize(size_t(kv.len(l, g)));
      kv.read_pos(l, g, kv.len(l, g), pos.data());
      const auto n = std::count_if(pos.begin(), pos.end(), [&](int32_t p) { return p >= from && p < to; });
      auto& keep = all[size_t(l)][size_t(g)];
      for (int32_t j = 0; j < int32_t(n); j++) keep.push_back(j);
    }
  return squeeze_span(kv, hp, freq_factors, pool, from, to, all);
}

SpanKeep top_of_span(const backend::KvStore& kv, int32_t from, int32_t to, double keep_ratio,
                     const std::vector<std::vector<std::vector<float>>>& scores) {
  const int Hk = kv.n_head_kv();
  const int32_t positions = int32_t(std::ceil(keep_ratio * double(to - from) - 1e-9));
  SpanKeep keep(size_t(kv.n_layer()));
  std::vector<int32_t> pos;
  for (int l = 0; l < kv.n_layer(); l++) {
    std::vector<std::vector<float>> rows(static_cast<size_t>(Hk));  // [Hk][the head's span entries] scores
    int64_t entries = 0;
    for (int g = 0; g < Hk; g++) {
      const std::vector<float>& sc = scores[size_t(l)][size_t(g)];
      pos.resize(size_t(kv.len(l, g)));
      kv.read_pos(l, g, kv.len(l, g), pos.data());
      for (size_t i = 0; i < pos.size(); i++)
        if (pos[i] >= from && pos[i] < to) {
          if (i >= sc.size()) fail("INTERNAL", "top_of_span: no score for an entry of the span");
          rows[size_t(g)].push_back(sc[i]);
        }
      entries += int64_t(rows[size_t(g)].size());
    }
    const int64_t k = int64_t(std::ceil(keep_ratio * double(entries) - 1e-9));
    keep[size_t(l)] = kv::capped_top(rows, k, positions);
  }
  return keep;
}

}  // namespace folio::forward
