#include "kv/schedule.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace folio::kv {

std::vector<int64_t> largest_remainder(const std::vector<int64_t>& num, int64_t den, int64_t total) {
  std::vector<int64_t> out(num.size());
  int64_t sum = 0;
  for (size_t i = 0; i < num.size(); i++) sum += out[i] = num[i] / den;
  std::vector<size_t> order(num.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return num[a] % den > num[b] % den; });
  int64_t missing = total - sum;
  if (missing < 0 || missing > int64_t(num.size())) fail("INTERNAL", "largest remainder: totals do not add up");
  for (size_t k = 0; k < size_t(missing); k++) out[order[k]]++;
  return out;
}

std::vector<int32_t> flat_schedule(int32_t b, int n_layers) { return std::vector<int32_t>(size_t(n_layers), b); }

std::vector<int32_t> pyramid_schedule(int32_t b, int32_t selectable, int n_layers, int32_t beta) {
  if (n_layers <= 1) return flat_schedule(b, n_layers);
  int64_t mn = b / beta, mx = 2 * int64_t(b) - mn;
  if (mx >= selectable) {
    mx = selectable;
    mn = 2 * int64_t(b) - mx;
  }
  // b_l = mx − l·(mx − mn)/(layers − 1), as exact rationals over den = layers − 1; they sum to layers·b.
  const int64_t den = n_layers - 1;
  std::vector<int64_t> num(static_cast<size_t>(n_layers));
  for (int l = 0; l < n_layers; l++) num[size_t(l)] = mx * den - int64_t(l) * (mx - mn);
  std::vector<int64_t> r = largest_remainder(num, den, int64_t(n_layers) * b);
  return std::vector<int32_t>(r.begin(), r.end());
}

}  // namespace folio::kv
