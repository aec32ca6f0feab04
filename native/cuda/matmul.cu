// Matrix products with weights in their GGUF types, and the embedding lookup. The weights are
// dequantized on the fly (dequant.cuh) in float32, never unpacked into a second copy:
//   - decode (n ≤ 8 tokens): gemv_kernel, one block per weight row, its threads striding over the row in
//     groups of 8 elements and multiplying each with all n tokens, so the weights are read once for all;
//   - prefill (n > 8): gemm_kernel, a tiled GEMM on CUDA cores: a 128-row × 32-column tile of W is
//     dequantized into shared memory, multiplied with a 64-token × 32-column tile of x, 8 × 4 outputs per
//     thread, float32 throughout; the next tiles are fetched into registers while the current ones are
//     multiplied. (Plain float32 FMA, no tensor cores: the same code on sm_75 and later.)
// x, y and out are float32, [n, cols] / [n, rows] / [n, cols] row-major. cols is a multiple of the block
// (32, or 256 for the K-quants) for the quantized types, anything for F32, F16, BF16. The weights' start
// and ldw must be 8-byte aligned for Q4_K and Q5_K, even for the other types (4-byte for F32; dequant.cuh,
// kAlign; GGUF tensor data and cudaMalloc give that); anything else is refused with an error.
#include <algorithm>
#include <cstdio>

#include "dequant.cuh"
#include "ops.h"

namespace folio::cuda {

namespace {

constexpr int kGemvMaxTokens = 8;  // above this, the tiled GEMM

// How many of a group's 8 columns remain before the end of the row.
__host__ __device__ __forceinline__ int left8(int64_t left) { return left < 8 ? int(left) : 8; }

// out[0, 8) = p[0, count), zeros after: count ≥ 8 but for the end of a plain-type row. vec: p is 16-byte
// aligned (uniform over the launch).
__host__ __device__ __forceinline__ void load_x(const float* __restrict__ p, int count, bool vec, float out[8]) {
  if (count < 8) {
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = i < count ? p[i] : 0.0f;
  } else if (vec) {
    const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
    out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
    out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
  } else {
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = p[i];
  }
}

// ---------------------------------------------------------------------------------------------------
// Decode: y[t, r] for t < n ≤ N. Block r (kGemvThreads threads) takes row r; thread i the groups
// i, i + kGemvThreads, ... of 8 elements. Consecutive threads read consecutive groups, so a warp reads a
// contiguous 256 elements of the row (one K-quant super-block, eight Q4_0 blocks).

constexpr int kGemvThreads = 128;

// acc[t] = thread tid's share of Σ_c W[row, c] · x[t, c] (t < n; acc[t ≥ n] = 0).
template <class T, int N>
__host__ __device__ __forceinline__ void gemv_partial(const uint8_t* row, int64_t cols, const float* x, int n,
                                                      bool xvec, int tid, float acc[N]) {
  FOLIO_UNROLL
  for (int t = 0; t < N; ++t) acc[t] = 0.0f;
  const float* xg = x + 8 * int64_t(tid);  // x[0, 8g ..]
  for (int64_t g = tid; 8 * g < cols; g += kGemvThreads, xg += 8 * kGemvThreads) {
    float wv[8];  // elements 8g .. 8g + 7 of the row (zeros past cols)
    dq::dequant_group<T>(row, g, cols, wv);
    const int count = T::kTail ? left8(cols - 8 * g) : 8;
    FOLIO_UNROLL
    for (int t = 0; t < N; ++t) {
      if (t < n) {
        float xv[8];  // x[t, 8g .. 8g + 8)
        load_x(xg + t * cols, count, xvec, xv);
        FOLIO_UNROLL
        for (int i = 0; i < 8; ++i) acc[t] = fmaf(wv[i], xv[i], acc[t]);
      }
    }
  }
}

template <class T, int N>
__global__ void __launch_bounds__(kGemvThreads)
    gemv_kernel(const uint8_t* __restrict__ w, size_t ldw, int64_t rows, int64_t cols, const float* __restrict__ x,
                int n, bool xvec, float* __restrict__ y) {
  const int64_t r = blockIdx.x;
  float acc[N];  // [token]
  gemv_partial<T, N>(w + size_t(r) * ldw, cols, x, n, xvec, threadIdx.x, acc);

  // Sum over the block: within each warp by shuffles, then the warps' partial sums through shared memory.
  __shared__ float part[kGemvThreads / 32][N];  // [warp, token]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int t = 0; t < N; ++t) {
    float s = acc[t];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) part[warp][t] = s;
  }
  __syncthreads();
  if (threadIdx.x < n) {
    const int t = threadIdx.x;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < kGemvThreads / 32; ++k) s += part[k][t];
    y[t * rows + r] = s;
  }
}

// ---------------------------------------------------------------------------------------------------
// Prefill: the output tile y[t0 .. t0 + BN, r0 .. r0 + BM) per block. Shared memory holds the tiles
// transposed, k-major, so that a thread reads its 8 rows and 4 tokens of one k as float4s.
// Thread (ty, tx) = (tid / 16, tid % 16) computes rows r0 + 8ty .. + 8 and tokens t0 + 4tx .. + 4.
// Loading: W is BM × BK/8 = 512 groups of 8, two per thread (group gi: row gi / 4, columns 8(gi % 4)),
// x is BN × BK/8 = 256 groups, one per thread; four neighbouring threads read one row's 32 columns.
// Rows ≥ rows, tokens ≥ n and columns ≥ cols (the plain types' rows can end inside a k tile) load zeros;
// rows and tokens outside are not stored.

constexpr int BM = 128, BN = 64, BK = 32, kGemmThreads = 256;
static_assert(BM * BK / 8 == 2 * kGemmThreads && BN * BK / 8 == kGemmThreads, "one x group, two W groups per thread");
static_assert((BM / 8) * (BN / 4) == kGemmThreads, "8 × 4 outputs per thread");

struct alignas(16) GemmTiles {
  float ws[BK][BM];  // ws[k][m] = W[r0 + m, k0 + k]
  float xs[BK][BN];  // xs[k][j] = x[t0 + j, k0 + k]
};

struct GemmArgs {
  const uint8_t* w;
  size_t ldw;
  int64_t rows, cols;
  const float* x;
  int64_t n;
  bool xvec;
  float* y;
};

// One thread of a GEMM block, split into the phases between which the block synchronizes (so that a
// CPU test can run the phases of all 256 threads in turn):
//   fetch(0); stash; sync; for each k0: { fetch(k0 + BK) unless last; multiply; sync; stash; sync }; store
template <class T>
struct GemmThread {
  int wm[2], wk;           // W groups loaded: rows r0 + wm[s], columns k0 + 8wk ..
  int xj, xk;              // x group loaded: token t0 + xj, columns k0 + 8xk ..
  bool w_ok[2], x_ok;      // inside the matrix (else zeros)
  const uint8_t* wrow[2];  // [ldw]
  const float* xrow;       // [cols]
  int ty, tx;              // outputs: rows r0 + 8ty + i, tokens t0 + 4tx + j
  int64_t r0, t0;
  float wreg[2][8], xreg[8];  // the next tiles' values, fetched while the current ones are multiplied
  float acc[8][4];            // [row 8ty + i][token 4tx + j]

  __host__ __device__ __forceinline__ GemmThread(const GemmArgs& a, int tid, int64_t r0_, int64_t t0_) {
    r0 = r0_, t0 = t0_;
    wk = tid & 3;
    wm[0] = tid >> 2;
    wm[1] = (tid + kGemmThreads) >> 2;
    xj = tid >> 2, xk = tid & 3;
    FOLIO_UNROLL
    for (int s = 0; s < 2; ++s) {
      w_ok[s] = r0 + wm[s] < a.rows;
      wrow[s] = a.w + size_t(w_ok[s] ? r0 + wm[s] : 0) * a.ldw;
    }
    x_ok = t0 + xj < a.n;
    xrow = a.x + (x_ok ? t0 + xj : 0) * a.cols;
    ty = tid >> 4, tx = tid & 15;
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) {
      FOLIO_UNROLL
      for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
    }
  }

  __host__ __device__ __forceinline__ void fetch(const GemmArgs& a, int64_t k0) {
    const int64_t gw = k0 / 8 + wk;  // W group: columns 8gw ..
    FOLIO_UNROLL
    for (int s = 0; s < 2; ++s) {
      if (w_ok[s] && 8 * gw < a.cols) {
        dq::dequant_group<T>(wrow[s], gw, a.cols, wreg[s]);
      } else {
        FOLIO_UNROLL
        for (int i = 0; i < 8; ++i) wreg[s][i] = 0.0f;
      }
    }
    const int64_t cx = k0 + 8 * xk;  // x group: columns cx ..
    if (x_ok && cx < a.cols) {
      load_x(xrow + cx, T::kTail ? left8(a.cols - cx) : 8, a.xvec, xreg);
    } else {
      FOLIO_UNROLL
      for (int i = 0; i < 8; ++i) xreg[i] = 0.0f;
    }
  }

  // Four threads of a warp share a row and write 8 k each: a 4-way bank conflict, on stores only.
  __host__ __device__ __forceinline__ void stash(GemmTiles& sm) const {
    FOLIO_UNROLL
    for (int s = 0; s < 2; ++s) {
      FOLIO_UNROLL
      for (int i = 0; i < 8; ++i) sm.ws[8 * wk + i][wm[s]] = wreg[s][i];
    }
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) sm.xs[8 * xk + i][xj] = xreg[i];
  }

  __host__ __device__ __forceinline__ void multiply(const GemmTiles& sm) {
    FOLIO_UNROLL
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&sm.ws[k][8 * ty]);
      const float4 a1 = *reinterpret_cast<const float4*>(&sm.ws[k][8 * ty + 4]);
      const float4 b = *reinterpret_cast<const float4*>(&sm.xs[k][4 * tx]);
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[4] = {b.x, b.y, b.z, b.w};
      FOLIO_UNROLL
      for (int i = 0; i < 8; ++i) {
        FOLIO_UNROLL
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
  }

  __host__ __device__ __forceinline__ void store(const GemmArgs& a) const {
    FOLIO_UNROLL
    for (int j = 0; j < 4; ++j) {
      const int64_t t = t0 + 4 * tx + j;
      if (t >= a.n) continue;
      FOLIO_UNROLL
      for (int i = 0; i < 8; ++i) {
        const int64_t r = r0 + 8 * ty + i;
        if (r < a.rows) a.y[t * a.rows + r] = acc[i][j];
      }
    }
  }
};

// Block (blockIdx.x, blockIdx.y): token tile blockIdx.x, row tile r_tile0 + blockIdx.y.
template <class T>
__global__ void __launch_bounds__(kGemmThreads) gemm_kernel(const GemmArgs a, int64_t r_tile0) {
  __shared__ GemmTiles sm;
  GemmThread<T> th(a, threadIdx.x, (r_tile0 + blockIdx.y) * BM, int64_t(blockIdx.x) * BN);
  th.fetch(a, 0);
  th.stash(sm);
  __syncthreads();
  for (int64_t k0 = 0; k0 < a.cols; k0 += BK) {
    const bool more = k0 + BK < a.cols;
    if (more) th.fetch(a, k0 + BK);
    th.multiply(sm);
    __syncthreads();  // everyone is done with the tiles before they are overwritten
    if (more) {
      th.stash(sm);
      __syncthreads();
    }
  }
  th.store(a);
}

// ---------------------------------------------------------------------------------------------------
// Embedding lookup: thread (blockIdx.x · 256 + threadIdx.x) writes group g of 8 of token t's row (the
// last one partial where a plain type's row ends inside it); blockIdx.y strides over the tokens.

constexpr int kGetRowsThreads = 256;

template <class T>
__global__ void __launch_bounds__(kGetRowsThreads)
    get_rows_kernel(const uint8_t* __restrict__ w, size_t ldw, int64_t cols, const int32_t* __restrict__ ids, int64_t n,
                    float* __restrict__ out) {
  const int64_t g = int64_t(blockIdx.x) * kGetRowsThreads + threadIdx.x;
  if (8 * g >= cols) return;
  const int count = T::kTail ? left8(cols - 8 * g) : 8;
  for (int64_t t = blockIdx.y; t < n; t += gridDim.y) {
    float v[8];
    dq::dequant_group<T>(w + size_t(ids[t]) * ldw, g, cols, v);
    float* o = out + t * cols + 8 * g;  // [count]
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (i < count) o[i] = v[i];
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Host side.

constexpr int64_t kMaxGridYZ = 65535;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <class T, int N>
int launch_gemv(const void* w, int64_t rows, int64_t cols, size_t ldw, const float* x, int64_t n, bool xvec, float* y) {
  // gridDim.x allows 2^31 − 1 blocks: one per row fits any vocabulary.
  gemv_kernel<T, N><<<unsigned(rows), kGemvThreads, 0, stream()>>>(static_cast<const uint8_t*>(w), ldw, rows, cols, x,
                                                                   int(n), xvec, y);
  return check_launch("matmul");
}

// The weights' start and row stride must suit T's loads (dq::*::kAlign): a misaligned load on the device
// would be a fatal error for the whole CUDA context, so it is refused here.
template <class T>
int check_alignment(const char* what, const void* w, size_t ldw) {
  if ((reinterpret_cast<uintptr_t>(w) | ldw) % T::kAlign == 0) return 0;
  char msg[160];
  std::snprintf(msg, sizeof msg, "weights at %p with %zu bytes per row are not %d-byte aligned", w, ldw, T::kAlign);
  return fail(what, msg);
}

template <class T>
int matmul_t(const void* w, int64_t rows, int64_t cols, size_t ldw, const float* x, int64_t n, float* y) {
  if (int e = check_alignment<T>("matmul", w, ldw)) return e;
  // float4 loads of x: every group of 8 starts 16-byte aligned if x does and cols is a multiple of 4
  const bool xvec = (reinterpret_cast<uintptr_t>(x) & 15) == 0 && cols % 4 == 0;
  if (n <= 1) return launch_gemv<T, 1>(w, rows, cols, ldw, x, n, xvec, y);
  if (n <= 2) return launch_gemv<T, 2>(w, rows, cols, ldw, x, n, xvec, y);
  if (n <= 4) return launch_gemv<T, 4>(w, rows, cols, ldw, x, n, xvec, y);
  if (n <= kGemvMaxTokens) return launch_gemv<T, kGemvMaxTokens>(w, rows, cols, ldw, x, n, xvec, y);

  // Token tiles on x (neighbouring blocks share a W tile, which then comes from L2), row tiles on y,
  // in launches of at most 65535 row tiles.
  const GemmArgs a{static_cast<const uint8_t*>(w), ldw, rows, cols, x, n, xvec, y};
  const int64_t t_tiles = ceil_div(n, BN), r_tiles = ceil_div(rows, BM);
  for (int64_t r_tile0 = 0; r_tile0 < r_tiles; r_tile0 += kMaxGridYZ) {
    const dim3 grid(unsigned(t_tiles), unsigned(std::min(kMaxGridYZ, r_tiles - r_tile0)));
    gemm_kernel<T><<<grid, kGemmThreads, 0, stream()>>>(a, r_tile0);
    if (int e = check_launch("matmul")) return e;
  }
  return 0;
}

template <class T>
int get_rows_t(const void* w, int64_t cols, size_t ldw, const int32_t* ids, int64_t n, float* out) {
  if (int e = check_alignment<T>("get_rows", w, ldw)) return e;
  const dim3 grid(unsigned(ceil_div(ceil_div(cols, 8), kGetRowsThreads)), unsigned(std::min(n, kMaxGridYZ)));
  get_rows_kernel<T><<<grid, kGetRowsThreads, 0, stream()>>>(static_cast<const uint8_t*>(w), ldw, cols, ids, n, out);
  return check_launch("get_rows");
}

// Calls f(T{}) with the struct T of ggml type id `type` (which block_of knows); for the plain types the
// variant with 8-byte loads where w and ldw allow them.
template <class F>
int with_type(int32_t type, const void* w, size_t ldw, F&& f) {
  const bool wide = (reinterpret_cast<uintptr_t>(w) | ldw) % 8 == 0;
  switch (type) {
    case 0: return wide ? f(dq::F32<8>{}) : f(dq::F32<4>{});
    case 1: return wide ? f(dq::F16<8>{}) : f(dq::F16<2>{});
    case 30: return wide ? f(dq::BF16<8>{}) : f(dq::BF16<2>{});
    case 8: return f(dq::Q8_0{});
    case 2: return f(dq::Q4_0{});
    case 3: return f(dq::Q4_1{});
    case 6: return f(dq::Q5_0{});
    case 7: return f(dq::Q5_1{});
    case 12: return f(dq::Q4_K{});
    case 13: return f(dq::Q5_K{});
    case 14: return f(dq::Q6_K{});
    case 10: return f(dq::Q2_K{});
    case 11: return f(dq::Q3_K{});
    case 20: return f(dq::IQ4_NL{});
    case 23: return f(dq::IQ4_XS{});
  }
  return -1;  // not reached
}

// Elements per block of a supported type (the plain types: 1); 0 for any other type.
int block_of(int32_t type) {
  switch (type) {
    case 0:
    case 1:
    case 30: return 1;
    case 8:
    case 2:
    case 3:
    case 6:
    case 7:
    case 20: return 32;
    case 10:
    case 11:
    case 12:
    case 13:
    case 14:
    case 23: return 256;
  }
  return 0;
}

// Checks type and cols; 0 if the operation can go ahead.
int check_args(const char* what, int32_t type, int64_t cols) {
  char msg[128];
  const int block = block_of(type);
  if (block == 0) {
    std::snprintf(msg, sizeof msg, "unsupported weight type %d", int(type));
    return fail(what, msg);
  }
  if (cols <= 0 || cols % block != 0) {
    std::snprintf(msg, sizeof msg, "%lld columns are not a positive multiple of type %d's block (%d)", (long long)cols,
                  int(type), block);
    return fail(what, msg);
  }
  return 0;
}

}  // namespace

int matmul(const void* w, int32_t type, int64_t rows, int64_t cols, size_t ldw, const float* x, int64_t n, float* y) {
  if (n <= 0 || rows <= 0) return 0;  // as the CPU matmul: nothing to do, nothing checked
  if (int e = check_args("matmul", type, cols)) return e;
  return with_type(type, w, ldw, [&](auto t) { return matmul_t<decltype(t)>(w, rows, cols, ldw, x, n, y); });
}

int get_rows(const void* w, int32_t type, int64_t cols, size_t ldw, const int32_t* ids, int64_t n, float* out) {
  if (n <= 0) return 0;
  if (int e = check_args("get_rows", type, cols)) return e;
  return with_type(type, w, ldw, [&](auto t) { return get_rows_t<decltype(t)>(w, cols, ldw, ids, n, out); });
}

}  // namespace folio::cuda
