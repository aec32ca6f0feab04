// One budget over a set of documents (kv::keep_over_set) against slow, obvious selections, on random scores whose
// heads hold different numbers of candidates (as a set's documents leave them):
//  - alpha 0, per layer: exactly the layer's best ceil(ratio · n / Hk) · Hk pairs, taken one by one;
//  - alpha 0, across layers: each layer keeps within Hk of what it won in the best total pairs of all layers, and
//    the layers together keep exactly the total;
//  - alpha 1: every head keeps the same number (less where it holds less);
//  - always: each head keeps its best candidates (none dropped above one kept), ascending, and ratio 1 keeps all.
//   set-budget-selftest [SEED]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "kv/allocator.h"

using namespace folio;
using Rows = std::vector<std::vector<std::vector<float>>>;
using Keep = std::vector<std::vector<std::vector<int32_t>>>;

namespace {

struct Pair {
  float s;
  int32_t j;
  int h;
};

// The best k (score, entry, head) pairs of rows [head][entry], ties to the lower entry, then the lower head.
std::vector<Pair> best(const std::vector<std::vector<float>>& rows, int64_t k) {
  std::vector<Pair> all;
  for (int h = 0; h < int(rows.size()); h++)
    for (int32_t j = 0; j < int32_t(rows[size_t(h)].size()); j++) all.push_back({rows[size_t(h)][size_t(j)], j, h});
  std::sort(all.begin(), all.end(), [](const Pair& a, const Pair& b) {
    return a.s != b.s ? a.s > b.s : a.j != b.j ? a.j < b.j : a.h < b.h;
  });
  all.resize(size_t(std::min<int64_t>(k, int64_t(all.size()))));
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  std::mt19937 rng(argc > 1 ? unsigned(std::atoi(argv[1])) : 1u);
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  int failures = 0, cases = 0;
  for (int trial = 0; trial < 200; trial++) {
    const int layers = 1 + int(rng() % 4), Hk = 1 + int(rng() % 6);
    Rows rows(static_cast<size_t>(layers), std::vector<std::vector<float>>(static_cast<size_t>(Hk)));
    for (auto& layer : rows)
      for (auto& row : layer) {
        row.resize(rng() % 60);
        // Coarse scores: ties happen, and the tie rule is part of what is checked.
        for (float& x : row) x = std::round(ud(rng) * 40.0f) / 40.0f;
      }
    const double ratio = trial % 10 == 0 ? 1.0 : 0.05 + 0.9 * ud(rng);
    for (double alpha : {0.0, 0.2, 1.0})
      for (bool across : {false, true}) {
        cases++;
        const Keep keep = kv::keep_over_set(rows, ratio, alpha, across);
        bool ok = keep.size() == rows.size();
        const char* why = "the shape differs";
        auto check = [&](bool c, const char* w) {
          if (!c && ok) ok = false, why = w;
        };
        int64_t n_all = 0, kept_all = 0;
        std::vector<int64_t> kept_layer(size_t(layers), 0), n_layer(size_t(layers), 0);
        for (int l = 0; l < layers && ok; l++) {
          check(keep[size_t(l)].size() == size_t(Hk), "a head is missing");
          for (int g = 0; g < Hk && ok; g++) {
            const std::vector<float>& row = rows[size_t(l)][size_t(g)];
            const std::vector<int32_t>& k = keep[size_t(l)][size_t(g)];
            check(std::is_sorted(k.begin(), k.end()) && std::adjacent_find(k.begin(), k.end()) == k.end(),
                  "kept entries not ascending");
            std::vector<uint8_t> in(row.size(), 0);
            for (int32_t j : k)
              check(j >= 0 && size_t(j) < row.size(), "a kept entry outside the row"), in[size_t(j)] = 1;
            float lowest_kept = INFINITY, highest_dropped = -INFINITY;
            for (size_t j = 0; j < row.size(); j++) {
              if (in[j]) lowest_kept = std::min(lowest_kept, row[j]);
              else highest_dropped = std::max(highest_dropped, row[j]);
            }
            check(highest_dropped <= lowest_kept, "a head dropped a better candidate than one it kept");
            kept_layer[size_t(l)] += int64_t(k.size());
            n_layer[size_t(l)] += int64_t(row.size());
          }
          n_all += n_layer[size_t(l)];
          kept_all += kept_layer[size_t(l)];
        }
        if (ok && ratio == 1.0) check(kept_all == n_all, "ratio 1 did not keep everything");
        if (ok && alpha == 0.0 && !across)
          for (int l = 0; l < layers && ok; l++) {
            const int64_t k = int64_t(std::ceil(ratio * double(n_layer[size_t(l)]) / Hk - 1e-9)) * Hk;
            Keep want(1, std::vector<std::vector<int32_t>>(size_t(Hk)));
            for (const Pair& p : best(rows[size_t(l)], k)) want[0][size_t(p.h)].push_back(p.j);
            for (auto& h : want[0]) std::sort(h.begin(), h.end());
            check(want[0] == keep[size_t(l)], "per layer, not the layer's best pairs");
          }
        if (ok && alpha == 0.0 && across && n_all > 0) {
          const int64_t total = std::min<int64_t>(int64_t(std::ceil(ratio * double(n_all) / Hk - 1e-9)) * Hk, n_all);
          std::vector<std::vector<float>> flat;
          for (const auto& layer : rows) flat.insert(flat.end(), layer.begin(), layer.end());
          std::vector<int64_t> won(size_t(layers), 0);
          for (const Pair& p : best(flat, total)) won[size_t(p.h / Hk)]++;
          int64_t sum = 0;
          for (int l = 0; l < layers; l++) {
            // A layer whose share holds all its candidates keeps them all; else its share, within Hk of what it won.
            const int64_t kl = kept_layer[size_t(l)];
            check(kl == n_layer[size_t(l)] || std::llabs(kl - won[size_t(l)]) < Hk,
                  "a layer's share is not what it won");
            sum += kl;
          }
          check(sum >= total - Hk || sum == n_all, "across layers, fewer kept than the total");
        }
        if (ok && alpha == 1.0 && ratio < 1.0)
          for (int l = 0; l < layers && ok; l++) {
            // Uniform where no head holds too few to take its part (those hand the rest to others).
            int32_t most = 0;
            size_t shortest = SIZE_MAX;
            for (int g = 0; g < Hk; g++) {
              most = std::max(most, int32_t(keep[size_t(l)][size_t(g)].size()));
              shortest = std::min(shortest, rows[size_t(l)][size_t(g)].size());
            }
            if (shortest <= size_t(most) || kept_layer[size_t(l)] == n_layer[size_t(l)]) continue;
            for (int g = 0; g < Hk; g++)
              check(int32_t(keep[size_t(l)][size_t(g)].size()) == most, "alpha 1 is not uniform");
          }
        if (!ok) {
          failures++;
          std::printf("FAIL trial %d (layers %d, Hk %d, ratio %.3f, alpha %.1f, %s): %s\n", trial, layers, Hk, ratio,
                      alpha, across ? "across layers" : "per layer", why);
        }
      }
  }
  std::printf("set-budget-selftest: %d of %d cases passed\n", cases - failures, cases);
  return failures ? 1 : 0;
}
