// The rotation of quantized cache entries on the device (kv/hadamard.h): the butterflies of the fast
// Walsh–Hadamard transform, __host__ __device__ so that tests/cuda-kv-entry-selftest.cu runs them against
// kv::hadamard. Pass h (h = 1, 2, 4, .. < block) pairs x[i] and x[i + h] within runs of 2h, as the CPU's
// butterfly does; a run of rows of a block each (block a power of two) is transformed row by row by the same
// passes, since no run of 2h ≤ block crosses a row. Each pair is one addition and one subtraction, so the
// results are the CPU's bit for bit, in whatever order the pairs of a pass are taken.
#pragma once

namespace folio::cuda::had {

// Butterfly p (0 ≤ p < count/2) of pass h over x [count]: the pair (i, i + h), i = 2h·(p / h) + p mod h.
__host__ __device__ __forceinline__ void butterfly(float* x, int p, int h) {
  const int i = ((p & ~(h - 1)) << 1) | (p & (h - 1));
  const float a = x[i], c = x[i + h];
  x[i] = a + c;
  x[i + h] = a - c;
}

}  // namespace folio::cuda::had
