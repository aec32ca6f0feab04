// Small device helpers the kernels share: reductions across a warp. (Cache entries are read by kv-entry.cuh.)
#pragma once

namespace folio::cuda {

// The max / sum of x over the 32 lanes, in every lane.
__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

}  // namespace folio::cuda
