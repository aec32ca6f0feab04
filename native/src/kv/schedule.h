// Layer schedules: the selectable per-head budget b_l of each layer.
#pragma once
#include <cstdint>
#include <vector>

namespace folio::kv {

// flat: b_l = b for every layer.
std::vector<int32_t> flat_schedule(int32_t b, int n_layers);

// pyramid (PyramidKV): budgets fall linearly from mx = 2b − b/beta at the first layer to mn = b/beta at
// the last; when mx would exceed the selectable prefix (L − w) it is capped there and mn = 2b − mx.
// The public code floors the step and overshoots; here the exact line is rounded by largest remainder so
// that Σ_l b_l = layers · b exactly (ties: earlier layers first).
std::vector<int32_t> pyramid_schedule(int32_t b, int32_t selectable, int n_layers, int32_t beta);

// Rounds non-negative rationals num[i] / den to integers that sum exactly to `total` (which must equal
// Σ num / den rounded down plus at most n): floors, then one more to the largest remainders (ties: lower
// index first).
std::vector<int64_t> largest_remainder(const std::vector<int64_t>& num, int64_t den, int64_t total);

}  // namespace folio::kv
