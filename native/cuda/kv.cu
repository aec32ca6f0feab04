// The flat per-head KV cache on the device (kv/flat-cache.h): appending a batch of tokens to every head
// in place, and compaction into a new layout. The layer's offset and len arrays live on the device, so
// the kernels read them there; the layer struct itself is passed by value. Entries are k_bytes / v_bytes
// apart, of any of the cache types (kv-entry.cuh).
#include <cuda_fp16.h>

#include <cstdio>

#include "kv-entry.cuh"
#include "ops.h"

namespace folio::cuda {

namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

// Row x [dim] into the entry at e, of type t, by the block's threads. F32 and F16 element by element (F16
// rounded to nearest even, as the CPU's conversion: core/fp16.h, F16C with _MM_FROUND_TO_NEAREST_INT).
// Quantized: warp w takes blocks w, w + kWarps, ..., lane i element i of the block; the scale's pick is
// reduced over the warp (entry::better gives the CPU's serial choice in any order), lane 0 stores d, and
// each lane its q (Q4_0: lane j < len/2 the byte of elements j and j + len/2).
__device__ void store_row(int32_t t, const float* x, int dim, uint8_t* e) {
  if (t == entry::kF32) {
    for (int d = threadIdx.x; d < dim; d += blockDim.x) reinterpret_cast<float*>(e)[d] = x[d];
    return;
  }
  if (t == entry::kF16) {
    for (int d = threadIdx.x; d < dim; d += blockDim.x) reinterpret_cast<__half*>(e)[d] = __float2half_rn(x[d]);
    return;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int blocks = (dim + entry::kBlock - 1) / entry::kBlock;
  for (int b = warp; b < blocks; b += kWarps) {  // warp-uniform
    const int len = min(entry::kBlock, dim - b * entry::kBlock);
    uint8_t* out = e + b * entry::block_bytes(t, entry::kBlock);
    const float xi = lane < len ? x[b * entry::kBlock + lane] : 0.0f;
    entry::Pick p = entry::pick_of(xi, lane);
    for (int o = 16; o > 0; o /= 2)
      p = entry::better(p, entry::Pick{__shfl_xor_sync(0xffffffffu, p.x, o), __shfl_xor_sync(0xffffffffu, p.i, o)});
    float d, id;
    entry::block_scale(t, p.x, &d, &id);  // the same in every lane
    if (lane == 0) entry::store_scale(out, d);
    const int q = entry::block_q(t, xi, id);
    if (t == entry::kQ8_0) {
      if (lane < len) out[2 + lane] = uint8_t(int8_t(q));
    } else {
      const int half = len / 2;
      const int hi = __shfl_down_sync(0xffffffffu, q, half);  // element lane + half's q
      if (lane < half) out[2 + lane] = uint8_t(q | hi << 4);
    }
  }
}

// One block per (token t, head g): grid (n, Hk). Head g's entry len[g] + t takes k[t, g·D ..],
// v[t, g·Dv ..] and pos[t] (len as before this call).     k: [n, Hk·D]; v: [n, Hk·Dv] float32.
__global__ void __launch_bounds__(kThreads)
    kv_append_kernel(folio_gpu_kv_layer L, const float* k, const float* v, const int32_t* pos) {
  const int64_t t = blockIdx.x;
  const int g = blockIdx.y;
  const int Hk = L.n_head_kv, D = L.head_dim, Dv = L.head_dim_v;
  const int64_t e = L.offset[g] + L.len[g] + t;  // the entry written
  store_row(L.k_type, k + (t * Hk + g) * D, D, static_cast<uint8_t*>(L.k) + e * L.k_bytes);
  store_row(L.v_type, v + (t * Hk + g) * Dv, Dv, static_cast<uint8_t*>(L.v) + e * L.v_bytes);
  if (threadIdx.x == 0) L.pos[e] = pos[t];
}

// Then len[g] += n: a kernel of its own, queued after the append, since every block of the append reads len.
__global__ void kv_len_add_kernel(int32_t* len, int32_t Hk, int32_t n) {
  const int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g < Hk) len[g] += n;
}

// An entry of `bytes` bytes from s to d by the lanes of a warp, in 4- or 2-byte words where the size (and
// so every entry's start, the buffers being 256-byte aligned) allows, else in bytes.
__device__ __forceinline__ void copy_entry(uint8_t* d, const uint8_t* s, int64_t bytes, int lane) {
  if (bytes % 4 == 0) {
    for (int64_t i = lane; i < bytes / 4; i += 32)
      reinterpret_cast<uint32_t*>(d)[i] = reinterpret_cast<const uint32_t*>(s)[i];
  } else if (bytes % 2 == 0) {
    for (int64_t i = lane; i < bytes / 2; i += 32)
      reinterpret_cast<uint16_t*>(d)[i] = reinterpret_cast<const uint16_t*>(s)[i];
  } else {
    for (int64_t i = lane; i < bytes; i += 32) d[i] = s[i];
  }
}

// One warp per kept entry, kWarps entries per block: grid (ceil(max_cnt / kWarps), Hk). Dst head g's entry i
// becomes src head g's entry keep[start[g] + i], copied as bytes.
//     keep: [start[Hk]] indices relative to each src head; start: [Hk + 1] (device copy of start_host).
__global__ void __launch_bounds__(kThreads)
    kv_gather_kernel(folio_gpu_kv_layer src, folio_gpu_kv_layer dst, const int32_t* keep, const int64_t* start) {
  const int g = blockIdx.y;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t i = int64_t(blockIdx.x) * kWarps + warp;  // index among head g's kept entries
  const int64_t cnt = start[g + 1] - start[g];
  if (i >= cnt) return;  // no __syncthreads below
  const int64_t from = src.offset[g] + keep[start[g] + i];
  const int64_t to = dst.offset[g] + i;
  const int64_t kb = src.k_bytes, vb = src.v_bytes;
  copy_entry(static_cast<uint8_t*>(dst.k) + to * kb, static_cast<const uint8_t*>(src.k) + from * kb, kb, lane);
  copy_entry(static_cast<uint8_t*>(dst.v) + to * vb, static_cast<const uint8_t*>(src.v) + from * vb, vb, lane);
  if (lane == 0) dst.pos[to] = src.pos[from];
}

// A side's type, size and entry bytes against one another.
int check_side(const char* what, const char* side, int32_t type, int32_t dim, int32_t bytes) {
  char msg[160];
  if (!entry::type_known(type)) {
    std::snprintf(msg, sizeof msg, "unsupported %s type %d (F32, F16, Q8_0 and Q4_0 are)", side, int(type));
    return fail(what, msg);
  }
  if (dim <= 0) {
    std::snprintf(msg, sizeof msg, "%s head size %d", side, int(dim));
    return fail(what, msg);
  }
  if (type == entry::kQ4_0 && dim % 2) {
    std::snprintf(msg, sizeof msg, "a q4_0 cache needs an even %s head size, not %d", side, int(dim));
    return fail(what, msg);
  }
  if (int64_t(bytes) != entry::entry_bytes(type, dim)) {
    std::snprintf(msg, sizeof msg, "%s entries of %d bytes, but %d numbers of type %d take %lld", side, int(bytes),
                  int(dim), int(type), (long long)entry::entry_bytes(type, dim));
    return fail(what, msg);
  }
  return 0;
}

}  // namespace

int check_layer(const char* what, const folio_gpu_kv_layer& L) {
  if (int e = check_side(what, "key", L.k_type, L.head_dim, L.k_bytes)) return e;
  return check_side(what, "value", L.v_type, L.head_dim_v, L.v_bytes);
}

int kv_append(const folio_gpu_kv_layer* layer, const float* k, const float* v, const int32_t* pos, int32_t n) {
  const folio_gpu_kv_layer L = *layer;
  if (n <= 0 || L.n_head_kv <= 0) return 0;
  if (L.n_head_kv > 65535) return fail("kv_append", "too many KV heads");
  if (int e = check_layer("kv_append", L)) return e;
  const dim3 grid{unsigned(n), unsigned(L.n_head_kv)};
  kv_append_kernel<<<grid, kThreads, 0, stream()>>>(L, k, v, pos);
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
  if (int e = check_layer("kv_gather", S)) return e;
  if (Dl.k_bytes != S.k_bytes || Dl.v_bytes != S.v_bytes || Dl.k_type != S.k_type || Dl.v_type != S.v_type)
    return fail("kv_gather", "source and destination entries differ");
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
  kv_gather_kernel<<<grid, kThreads, 0, stream()>>>(S, Dl, keep, start_dev);
  if (int e = check_launch("kv_gather")) return e;
  return 0;
}

}  // namespace folio::cuda
