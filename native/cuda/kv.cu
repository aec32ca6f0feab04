// The flat per-head KV cache on the device (kv/flat-cache.h): appending a batch of tokens to every head
// in place, and compaction into a new layout. The layer's offset and len arrays live on the device, so
// the kernels read them there; the layer struct itself is passed by value.
#include <cuda_fp16.h>

#include "ops.h"

namespace folio::cuda {

namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ void store(float* dst, float x) { *dst = x; }
// Round to nearest even, as the CPU's conversion (core/fp16.h, F16C with _MM_FROUND_TO_NEAREST_INT).
__device__ __forceinline__ void store(__half* dst, float x) { *dst = __float2half_rn(x); }

// One block per (token t, head g): grid (n, Hk). Head g's entry len[g] + t takes k[t, g·D ..],
// v[t, g·Dv ..] and pos[t] (len as before this call).     k: [n, Hk·D]; v: [n, Hk·Dv] float32; the cache in T.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    kv_append_kernel(folio_gpu_kv_layer L, const float* k, const float* v, const int32_t* pos) {
  const int64_t t = blockIdx.x;
  const int g = blockIdx.y;
  const int Hk = L.n_head_kv, D = L.head_dim, Dv = L.head_dim_v;
  const int64_t e = L.offset[g] + L.len[g] + t;  // the entry written
  const float* kr = k + (t * Hk + g) * D;
  const float* vr = v + (t * Hk + g) * Dv;
  T* kd = static_cast<T*>(L.k) + e * D;
  T* vd = static_cast<T*>(L.v) + e * Dv;
  for (int d = threadIdx.x; d < D; d += blockDim.x) store(kd + d, kr[d]);
  for (int d = threadIdx.x; d < Dv; d += blockDim.x) store(vd + d, vr[d]);
  if (threadIdx.x == 0) L.pos[e] = pos[t];
}

// Then len[g] += n: a kernel of its own, queued after the append, since every block of the append reads len.
__global__ void kv_len_add_kernel(int32_t* len, int32_t Hk, int32_t n) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g < Hk) len[g] += n;
}

// One warp per kept entry, kWarps entries per block: grid (ceil(max_cnt / kWarps), Hk). Dst head g's entry i
// becomes src head g's entry keep[start[g] + i]. Elements are copied as they are (U: their bit pattern).
//     keep: [start[Hk]] indices relative to each src head; start: [Hk + 1] (device copy of start_host).
template <typename U>
__global__ void __launch_bounds__(kThreads)
    kv_gather_kernel(folio_gpu_kv_layer src, folio_gpu_kv_layer dst, const int32_t* keep, const int64_t* start) {
  const int g = blockIdx.y;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t i = int64_t(blockIdx.x) * kWarps + warp;  // index among head g's kept entries
  const int64_t cnt = start[g + 1] - start[g];
  if (i >= cnt) return;  // no __syncthreads below
  const int D = src.head_dim, Dv = src.head_dim_v;
  const int64_t from = src.offset[g] + keep[start[g] + i];
  const int64_t to = dst.offset[g] + i;
  const U* ks = static_cast<const U*>(src.k) + from * D;
  const U* vs = static_cast<const U*>(src.v) + from * Dv;
  U* kd = static_cast<U*>(dst.k) + to * D;
  U* vd = static_cast<U*>(dst.v) + to * Dv;
  for (int d = lane; d < D; d += 32) kd[d] = ks[d];
  for (int d = lane; d < Dv; d += 32) vd[d] = vs[d];
  if (lane == 0) dst.pos[to] = src.pos[from];
}

}  // namespace

int kv_append(const folio_gpu_kv_layer* layer, const float* k, const float* v, const int32_t* pos, int32_t n) {
  const folio_gpu_kv_layer L = *layer;
  if (n <= 0 || L.n_head_kv <= 0) return 0;
  if (L.n_head_kv > 65535) return fail("kv_append", "too many KV heads");
  if (L.kv_type != 0 && L.kv_type != 1) return fail("kv_append", "unsupported KV type");
  const dim3 grid{unsigned(n), unsigned(L.n_head_kv)};
  if (L.kv_type == 1) kv_append_kernel<__half><<<grid, kThreads, 0, stream()>>>(L, k, v, pos);
  else kv_append_kernel<float><<<grid, kThreads, 0, stream()>>>(L, k, v, pos);
  if (int e = check_launch("kv_append")) return e;
  kv_len_add_kernel<<<unsigned((L.n_head_kv + kThreads - 1) / kThreads), kThreads, 0, stream()>>>(L.len, L.n_head_kv,
                                                                                                  n);
  if (int e = check_launch("kv_append (lengths)")) return e;
  return 0;
}

int kv_gather(const folio_gpu_kv_layer* src, const folio_gpu_kv_layer* dst, const int32_t* keep, const int64_t* start) {
  const folio_gpu_kv_layer S = *src, Dl = *dst;
  const int Hk = S.n_head_kv;
  if (Hk <= 0) return 0;
  if (Hk > 65535) return fail("kv_gather", "too many KV heads");
  if (S.kv_type != 0 && S.kv_type != 1) return fail("kv_gather", "unsupported KV type");
  int64_t max_cnt = 0;
  for (int g = 0; g < Hk; g++) {
    const int64_t c = start[g + 1] - start[g];
    max_cnt = c > max_cnt ? c : max_cnt;
  }
  if (max_cnt <= 0) return 0;
  // start_host is host memory: the kernel reads a device copy. The copy from pageable memory has been
  // staged when cudaMemcpyAsync returns, and runs in stream order, after earlier users of the scratch.
  const size_t bytes = size_t(Hk + 1) * sizeof(int64_t);
  auto* start_dev = static_cast<int64_t*>(scratch(Scratch::Select, bytes));  // [Hk + 1]
  if (!start_dev) return 1;
  cudaError_t ce = cudaMemcpyAsync(start_dev, start, bytes, cudaMemcpyHostToDevice, stream());
  if (ce != cudaSuccess) return fail("kv_gather", ce);
  const dim3 grid{unsigned((max_cnt + kWarps - 1) / kWarps), unsigned(Hk)};
  if (S.kv_type == 1) kv_gather_kernel<uint16_t><<<grid, kThreads, 0, stream()>>>(S, Dl, keep, start_dev);
  else kv_gather_kernel<uint32_t><<<grid, kThreads, 0, stream()>>>(S, Dl, keep, start_dev);
  if (int e = check_launch("kv_gather")) return e;
  return 0;
}

}  // namespace folio::cuda
