// Element-wise and row-wise operations: RMS norm, rotary embedding, SwiGLU and GEGLU, residual and bias
// additions, scaling, the Hadamard rotation of quantized cache entries.
// Each follows its CPU version (backend/cpu-ops.cc) operation for operation, so that results differ only
// by the last-bit differences of the device's expf / sincosf.
#include <cmath>
#include <cstdio>

#include "hadamard.cuh"
#include "ops.h"

namespace folio::cuda {

namespace {

constexpr int kThreads = 256;           // threads of the 1-D kernels
constexpr int kMaxBlocks = 65535 * 16;  // enough blocks to fill any GPU; grid-stride loops do the rest

// Blocks for a grid-stride loop over `count` elements.
unsigned grid_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return unsigned(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// One block per row: the sum of squares in double (as the CPU does), each thread over a stride of the row,
// then a tree reduction in shared memory; then the row is scaled in place (x and y may alias: every
// element is read and written by the same thread, after the whole row has been summed).
__global__ void __launch_bounds__(kThreads)
    rms_norm_kernel(const float* x, const float* g, float* y, int64_t width, float eps) {
  __shared__ double part[kThreads];  // [threads] partial sums of squares
  const int64_t row = blockIdx.x;
  const float* xr = x + row * width;
  float* yr = y + row * width;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) sum += double(xr[i]) * double(xr[i]);
  part[threadIdx.x] = sum;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (int(threadIdx.x) < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  const float scale = 1.0f / sqrtf(float(part[0] / double(width)) + eps);
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) yr[i] = xr[i] * scale * g[i];
}

// One block per token. The pair angles first (shared by every head of the token): the power
// base^(−2i/rope_dim) is built by i repeated float multiplications of pos by theta_scale, exactly the
// CPU's sequence of roundings, so the angles agree bit for bit; then every (head, pair) rotates.
constexpr int kMaxPairs = 128;  // rope_dim ≤ head_dim ≤ 256
__global__ void __launch_bounds__(kThreads)
    rope_kernel(float* x, int32_t n_heads, int32_t head_dim, const int32_t* pos, int32_t rope_dim, int32_t neox,
                float theta_scale, float freq_scale, float mscale, const float* freq_factors) {
  __shared__ float cs[2 * kMaxPairs];  // [pairs, 2] cos and sin of each pair's angle
  const int64_t t = blockIdx.x;
  const int pairs = rope_dim / 2;
  for (int i = threadIdx.x; i < pairs; i += blockDim.x) {
    float theta = float(pos[t]);
    for (int k = 0; k < i; k++) theta *= theta_scale;
    const float ff = freq_factors ? freq_factors[i] : 1.0f;
    const float th = freq_scale * (theta / ff);
    float sn, c;
    sincosf(th, &sn, &c);
    cs[2 * i] = __fmul_rn(c, mscale);  // the CPU's rounding: cos·mscale, then the rotation
    cs[2 * i + 1] = __fmul_rn(sn, mscale);
  }
  __syncthreads();
  float* xt = x + t * int64_t(n_heads) * head_dim;  // [n_heads, head_dim] of this token
  for (int idx = threadIdx.x; idx < n_heads * pairs; idx += blockDim.x) {
    const int h = idx / pairs, i = idx % pairs;
    float* v = xt + int64_t(h) * head_dim;
    const int a = neox ? i : 2 * i, b = neox ? i + pairs : 2 * i + 1;
    const float c = cs[2 * i], sn = cs[2 * i + 1];
    const float x0 = v[a], x1 = v[b];
    // Rounded multiplications, not fused: the CPU build (x86-64-v2 baseline) has no FMA.
    v[a] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, sn));
    v[b] = __fadd_rn(__fmul_rn(x0, sn), __fmul_rn(x1, c));
  }
}

// h may alias g: each element is read, then written, by one thread.
__global__ void __launch_bounds__(kThreads) swiglu_kernel(const float* g, const float* u, float* h, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    h[i] = gi / (1.0f + expf(-gi)) * u[i];
  }
}

// GELU's tanh form, as cpu::gelu_tanh (backend/cpu-ops.cc).
__global__ void __launch_bounds__(kThreads) geglu_kernel(const float* g, const float* u, float* h, int64_t count) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f, kCoef = 0.044715f;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const float x = g[i];
    h[i] = 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * x * (1.0f + kCoef * x * x))) * u[i];
  }
}

__global__ void __launch_bounds__(kThreads) scale_kernel(float* x, float s, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    x[i] *= s;
}

__global__ void __launch_bounds__(kThreads) add_kernel(float* x, const float* y, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    x[i] += y[i];
}

// x: [n, width]; b: [width]. Rows on gridDim.y when they fit, so that no division is needed; otherwise
// (more than 65535 rows) a flat grid-stride loop.
__global__ void __launch_bounds__(kThreads) add_bias_rows_kernel(float* x, const float* b, int64_t width) {
  float* xr = x + int64_t(blockIdx.y) * width;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < width; i += int64_t(gridDim.x) * blockDim.x)
    xr[i] += b[i];
}

__global__ void __launch_bounds__(kThreads) add_bias_flat_kernel(float* x, const float* b, int64_t n, int64_t width) {
  const int64_t count = n * width;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    x[i] += b[i % width];
}

// x [rows, block] ← each row times the normalised Walsh–Hadamard matrix, in tiles of kHadamardTile floats
// (whole rows: block ≤ 1024 divides it), one tile per block: the tile goes to shared memory, the log2(block)
// butterfly passes run over it with a barrier between them, then each number is multiplied by norm =
// 1/√block (computed on the host as the CPU does) on the way back. The CPU's operations exactly
// (kv::hadamard, hadamard.cuh).     x: [total] = [rows·block].
constexpr int kHadamardTile = 2048;
__global__ void __launch_bounds__(kThreads) hadamard_kernel(float* x, int64_t total, int32_t block, float norm) {
  __shared__ float tile[kHadamardTile];  // [count] the tile's rows
  const int64_t base = int64_t(blockIdx.x) * kHadamardTile;
  const int count = int(total - base < kHadamardTile ? total - base : kHadamardTile);
  for (int i = threadIdx.x; i < count; i += blockDim.x) tile[i] = x[base + i];
  for (int h = 1; h < block; h *= 2) {
    __syncthreads();  // the tile is loaded / the previous pass is done
    for (int p = threadIdx.x; p < count / 2; p += blockDim.x) had::butterfly(tile, p, h);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < count; i += blockDim.x) x[base + i] = tile[i] * norm;
}

}  // namespace

int rms_norm(const float* x, const float* g, float* y, int64_t n, int64_t width, float eps) {
  if (n <= 0 || width <= 0) return 0;
  if (n > 0x7fffffff) return fail("rms_norm", "too many rows");
  rms_norm_kernel<<<unsigned(n), kThreads, 0, stream()>>>(x, g, y, width, eps);
  if (int e = check_launch("rms_norm")) return e;
  return 0;
}

int rope(float* x, int64_t n, int32_t n_heads, int32_t head_dim, const int32_t* pos, const folio_gpu_rope* p,
         const float* freq_factors) {
  if (n <= 0 || n_heads <= 0 || head_dim <= 0 || p->rope_dim < 2) return 0;
  if (p->rope_dim > head_dim || p->rope_dim / 2 > kMaxPairs) return fail("rope", "rope_dim larger than supported");
  if (n > 0x7fffffff) return fail("rope", "too many tokens");
  // The CPU's expression (std::pow of two floats), evaluated on the host so that both start from the same value.
  const float theta_scale = std::pow(p->base, -2.0f / float(p->rope_dim));
  rope_kernel<<<unsigned(n), kThreads, 0, stream()>>>(x, n_heads, head_dim, pos, p->rope_dim, p->neox, theta_scale,
                                                      p->freq_scale, p->mscale, freq_factors);
  if (int e = check_launch("rope")) return e;
  return 0;
}

int swiglu(const float* g, const float* u, float* h, int64_t count) {
  if (count <= 0) return 0;
  swiglu_kernel<<<grid_for(count), kThreads, 0, stream()>>>(g, u, h, count);
  if (int e = check_launch("swiglu")) return e;
  return 0;
}

int geglu(const float* g, const float* u, float* h, int64_t count) {
  if (count <= 0) return 0;
  geglu_kernel<<<grid_for(count), kThreads, 0, stream()>>>(g, u, h, count);
  if (int e = check_launch("geglu")) return e;
  return 0;
}

int scale(float* x, float s, int64_t count) {
  if (count <= 0) return 0;
  scale_kernel<<<grid_for(count), kThreads, 0, stream()>>>(x, s, count);
  if (int e = check_launch("scale")) return e;
  return 0;
}

int add(float* x, const float* y, int64_t count) {
  if (count <= 0) return 0;
  add_kernel<<<grid_for(count), kThreads, 0, stream()>>>(x, y, count);
  if (int e = check_launch("add")) return e;
  return 0;
}

int add_bias(float* x, const float* b, int64_t n, int64_t width) {
  if (n <= 0 || width <= 0) return 0;
  if (n <= 65535) {
    const dim3 grid{grid_for(width) < 4096 ? grid_for(width) : 4096, unsigned(n)};
    add_bias_rows_kernel<<<grid, kThreads, 0, stream()>>>(x, b, width);
  } else {
    add_bias_flat_kernel<<<grid_for(n * width), kThreads, 0, stream()>>>(x, b, n, width);
  }
  if (int e = check_launch("add_bias")) return e;
  return 0;
}

int hadamard(float* x, int64_t rows, int32_t block) {
  if (block < 2 || block > 1024 || (block & (block - 1))) {
    char msg[96];
    std::snprintf(msg, sizeof msg, "block %d is not a power of two from 2 to 1024", int(block));
    return fail("hadamard", msg);
  }
  if (rows < 0) return fail("hadamard", "a negative number of rows");
  if (rows == 0) return 0;
  if (rows > (int64_t(1) << 40) / block) return fail("hadamard", "too many rows");
  const int64_t total = rows * block, tiles = (total + kHadamardTile - 1) / kHadamardTile;  // ≤ 2^29
  const float norm = 1.0f / std::sqrt(float(block));                                        // kv::hadamard's expression
  hadamard_kernel<<<unsigned(tiles), kThreads, 0, stream()>>>(x, total, block, norm);
  if (int e = check_launch("hadamard")) return e;
  return 0;
}

}  // namespace folio::cuda
