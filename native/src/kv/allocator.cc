#include "kv/allocator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "kv/schedule.h"

namespace folio::kv {

std::vector<int32_t> uniform_caps(int n_heads, int32_t b) { return std::vector<int32_t>(size_t(n_heads), b); }

std::vector<int32_t> global_topk_counts(const std::vector<std::vector<float>>& scores, int64_t k) {
  const int H = int(scores.size());
  std::vector<int32_t> won(size_t(H), 0);
  if (H == 0 || k <= 0) return won;
  // Every (head, token) pair, the heads' rows back to back (they may differ in length).
  std::vector<std::pair<int32_t, int32_t>> order;
  for (int h = 0; h < H; h++)
    for (int32_t j = 0; j < int32_t(scores[size_t(h)].size()); j++) order.emplace_back(h, j);
  if (k > int64_t(order.size())) fail("INTERNAL", "global top-k: k larger than the scores");
  // The k-th best score is the threshold; ties break to the lower token index, then the lower head, as
  // everywhere in Folio.
  auto better = [&](const std::pair<int32_t, int32_t>& a, const std::pair<int32_t, int32_t>& c) {
    const float sa = scores[size_t(a.first)][size_t(a.second)], sc = scores[size_t(c.first)][size_t(c.second)];
    if (sa != sc) return sa > sc;
    if (a.second != c.second) return a.second < c.second;
    return a.first < c.first;
  };
  std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), better);
  for (int64_t i = 0; i < k; i++) won[size_t(order[size_t(i)].first)]++;
  return won;
}

std::vector<int32_t> ada_caps(const std::vector<std::vector<float>>& scores, int32_t b, double alpha) {
  if (scores.empty()) return {};
  std::vector<int64_t> n(scores.size());
  int64_t total = 0;
  for (size_t h = 0; h < scores.size(); h++) total += n[h] = int64_t(scores[h].size());
  if (int64_t(scores.size()) * b > total) fail("INTERNAL", "ada: budget larger than the selectable tokens");
  return ada_caps_from_won(global_topk_counts(scores, int64_t(scores.size()) * b), n, b, alpha);
}

std::vector<int32_t> ada_caps_from_won(const std::vector<int32_t>& won, int64_t n, int32_t b, double alpha) {
  return ada_caps_from_won(won, std::vector<int64_t>(won.size(), n), b, alpha);
}

std::vector<int32_t> ada_caps_from_won(const std::vector<int32_t>& won, const std::vector<int64_t>& n, int32_t b,
                                       double alpha) {
  const int H = int(won.size());
  const int64_t k = int64_t(H) * b;
  // floor(alpha·b) for every head, then the rest in proportion to what each head won.
  const int64_t floor_share = std::min<int64_t>(b, int64_t(std::floor(alpha * double(b) + 1e-9)));
  const int64_t rest = int64_t(H) * (b - floor_share);
  std::vector<int64_t> num(static_cast<size_t>(H));
  for (int h = 0; h < H; h++) num[size_t(h)] = rest * won[size_t(h)];
  std::vector<int64_t> share = k > 0 ? largest_remainder(num, k, rest) : std::vector<int64_t>(size_t(H), 0);
  std::vector<int32_t> caps(static_cast<size_t>(H));
  for (int h = 0; h < H; h++) caps[size_t(h)] = int32_t(floor_share + share[size_t(h)]);
  // A head cannot keep more than it has; hand any excess to the heads with room, in head order.
  int64_t excess = 0;
  for (int h = 0; h < H; h++)
    if (caps[size_t(h)] > n[size_t(h)])
      excess += caps[size_t(h)] - n[size_t(h)], caps[size_t(h)] = int32_t(n[size_t(h)]);
  for (int h = 0; h < H; h++) {
    const int64_t add = std::min<int64_t>(excess, n[size_t(h)] - caps[size_t(h)]);
    caps[size_t(h)] += int32_t(add);
    excess -= add;
  }
  return caps;
}

std::vector<int32_t> top_tokens(const std::vector<float>& scores, int32_t cap) {
  const int32_t n = int32_t(scores.size());
  cap = std::clamp(cap, 0, n);
  std::vector<int32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  auto better = [&](int32_t a, int32_t c) {
    return scores[size_t(a)] != scores[size_t(c)] ? scores[size_t(a)] > scores[size_t(c)] : a < c;
  };
  if (cap < n) std::nth_element(idx.begin(), idx.begin() + cap, idx.end(), better);
  idx.resize(size_t(cap));
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::vector<std::vector<int32_t>> capped_top(const std::vector<std::vector<float>>& scores, int64_t k, int32_t cap) {
  const size_t H = scores.size();
  int64_t room = 0;
  for (const auto& row : scores) room += std::min<int64_t>(int64_t(row.size()), std::max(cap, 0));
  k = std::min(k, room);
  const bool any = k > 0;
  // The global top k; the heads that won more than the cap keep the cap, and the others compete again for
  // the rest: the same as taking the pairs best first and passing over a head once it is full.
  std::vector<int32_t> count(H, 0);
  std::vector<size_t> open(H);
  std::iota(open.begin(), open.end(), size_t(0));
  while (k > 0) {
    std::vector<std::vector<float>> rows;
    for (size_t h : open) rows.push_back(scores[h]);
    const std::vector<int32_t> won = global_topk_counts(rows, k);
    std::vector<size_t> under;
    for (size_t i = 0; i < open.size(); i++)
      if (won[i] > cap) {
        count[open[i]] = cap;
        k -= cap;
      } else {
        under.push_back(open[i]);
      }
    if (under.size() == open.size()) {
      for (size_t i = 0; i < open.size(); i++) count[open[i]] = won[i];
      break;
    }
    open = std::move(under);
  }
  std::vector<std::vector<int32_t>> keep(H);
  for (size_t h = 0; h < H; h++) {
    if (any && count[h] == 0 && !scores[h].empty()) count[h] = 1;
    keep[h] = top_tokens(scores[h], count[h]);
  }
  return keep;
}

std::vector<std::vector<std::vector<int32_t>>> keep_over_set(const std::vector<std::vector<std::vector<float>>>& rows,
                                                             double ratio, double alpha, bool across_layers) {
  const size_t layers = rows.size();
  std::vector<std::vector<std::vector<int32_t>>> keep(layers);
  if (layers == 0) return keep;
  const int64_t Hk = int64_t(rows[0].size());
  std::vector<int64_t> n_layer(layers, 0);  // each layer's candidates
  for (size_t l = 0; l < layers; l++)
    for (const auto& row : rows[l]) n_layer[l] += int64_t(row.size());
  // b[l]: the layer's kept candidates per head, on average (its share is Hk · b[l]).
  auto per_head = [&](int64_t n) { return int64_t(std::ceil(ratio * double(n) / double(Hk) - 1e-9)); };
  std::vector<int64_t> b(layers);
  if (across_layers && Hk > 0) {
    std::vector<std::vector<float>> all;  // every layer's heads, layer by layer
    for (const auto& layer : rows) all.insert(all.end(), layer.begin(), layer.end());
    const int64_t n = std::accumulate(n_layer.begin(), n_layer.end(), int64_t(0));
    const int64_t total = per_head(n) * Hk;
    if (total >= n) {  // every candidate fits: each layer keeps all of its own
      for (size_t l = 0; l < layers; l++) b[l] = (n_layer[l] + Hk - 1) / Hk;
    } else {
      const std::vector<int32_t> won = global_topk_counts(all, total);
      std::vector<int64_t> won_layer(layers, 0);
      for (size_t r = 0; r < won.size(); r++) won_layer[r / size_t(Hk)] += won[r];
      // Each layer's share per head, rounded so that the shares still sum to the total (a multiple of Hk).
      b = largest_remainder(won_layer, Hk, total / Hk);
    }
  } else {
    for (size_t l = 0; l < layers; l++) b[l] = per_head(n_layer[l]);
  }
  for (size_t l = 0; l < layers; l++) {
    const auto& layer = rows[l];
    keep[l].resize(layer.size());
    if (Hk * b[l] >= n_layer[l]) {  // the layer's share holds every candidate
      for (size_t g = 0; g < layer.size(); g++) {
        keep[l][g].resize(layer[g].size());
        std::iota(keep[l][g].begin(), keep[l][g].end(), 0);
      }
      continue;
    }
    std::vector<int64_t> n(layer.size());
    for (size_t g = 0; g < layer.size(); g++) n[g] = int64_t(layer[g].size());
    const std::vector<int32_t> caps = ada_caps_from_won(global_topk_counts(layer, Hk * b[l]), n, int32_t(b[l]), alpha);
    for (size_t g = 0; g < layer.size(); g++) keep[l][g] = top_tokens(layer[g], caps[g]);
  }
  return keep;
}

}  // namespace folio::kv
