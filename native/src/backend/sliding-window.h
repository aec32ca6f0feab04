// The sliding-window rule of attention (gemma3's local layers, phi3's every layer): the one C++ definition,
// used by the CPU kernels, their scalar reference and the reference GPU. The CUDA kernels have their own copy
// in native/cuda/sliding-window.cuh, the Vulkan shaders in native/vulkan/shaders/sliding.glsl.
//
// A key at position p is visible to a query at position q iff p <= q and q − p < n_swa (n_swa 0: no window).
// ik_llama.cpp's rule (src/llama.cpp, the KQ_mask_swa of llama_set_inputs): a cell is masked when
// `pos - cell.pos >= n_swa`, so the query sees n_swa positions, itself included ("<", not "<=").
#pragma once
#include <algorithm>
#include <cstdint>

namespace folio::backend {

inline bool in_window(int32_t q_pos, int32_t k_pos, int32_t n_swa) {
  return k_pos <= q_pos && (n_swa <= 0 || q_pos - k_pos < n_swa);
}

// The first of n entries with ascending positions (a head of the flat cache) that a query at q_pos may see
// by the window: entries [first, the query's own] are its keys, a contiguous range since positions ascend.
inline int32_t first_in_window(const int32_t* pos, int32_t n, int32_t q_pos, int32_t n_swa) {
  if (n_swa <= 0) return 0;
  return int32_t(
      std::partition_point(pos, pos + n, [&](int32_t p) { return !in_window(q_pos, p, n_swa) && p < q_pos; }) - pos);
}

}  // namespace folio::backend
