// The sliding-window rule of attention on the device: the CUDA copy of backend/sliding-window.h (where the
// rule and its source, ik_llama.cpp's KQ_mask_swa, are described). A key at position p is visible to a
// query at position q iff p <= q and q − p < n_swa (n_swa 0: no window).
#pragma once
#include <cstdint>

namespace folio::cuda {

__device__ __forceinline__ bool in_window(int32_t q_pos, int32_t k_pos, int32_t n_swa) {
  return k_pos <= q_pos && (n_swa <= 0 || q_pos - k_pos < n_swa);
}

// The first of n entries with ascending positions that a query at q_pos may see by the window (a binary
// search; every thread of a block may run it alike).
__device__ __forceinline__ int32_t first_in_window(const int32_t* pos, int32_t n, int32_t q_pos, int32_t n_swa) {
  if (n_swa <= 0) return 0;
  int32_t lo = 0, hi = n;  // entries [0, lo) are left of the window, [hi, n) are not
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (!in_window(q_pos, pos[mid], n_swa) && pos[mid] < q_pos) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

}  // namespace folio::cuda
