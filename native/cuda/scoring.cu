// The SnapKV window scores (kv/scorer.cc) on the device; the selections from them run on the host (kv::Compressor).
//
// Window scores take three passes over the keys. (1) Per window row (query head, window query) the max
// and the sum of exp(score − max) over the visible keys, for slices of the keys in parallel (online
// softmax inside a slice), merged per row into the max and 1/sum. (2) Per key, the probabilities of all
// G·w rows of its KV head, summed in double (as the CPU does) and scaled by 1/(G·w). (3) Max-pooling.
// The keys may be of any cache type (kv-entry.cuh): converted to float as a tile is loaded, to exactly the
// numbers the CPU decodes (kv::decode_stored); rotated keys are scored against rotated queries (the engine
// rotates them), which the CPU's scorer reads rotated back instead.
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kv-entry.cuh"
#include "ops.h"
#include "warp.cuh"

namespace folio::cuda {

namespace {

// ---- helpers ----

// Max-pooling at j of x [n]: the max over [j − kernel/2, j + kernel/2] ∩ [0, n), as kv::max_pool.
__host__ __device__ inline float pool_at(const float* x, int64_t n, int64_t j, int kernel) {
  const int64_t r = kernel / 2;
  const int64_t lo = j - r > 0 ? j - r : 0, hi = j + r < n - 1 ? j + r : n - 1;
  float m = -INFINITY;
  for (int64_t t = lo; t <= hi; t++) m = m < x[t] ? x[t] : m;  // std::max(m, x[t])
  return m;
}

// ---- window scores ----

constexpr int kTile = 32;  // keys per tile: one per lane
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerBlock = 64;  // window rows of a pass-1 block
constexpr int kMaxDim = 256;

struct WsArgs {
  const float* qw;        // [w, H·D] window queries
  const uint8_t* k;       // the layer's keys: [capacity] entries of k_bytes (D numbers of k_type)
  const int64_t* offset;  // [Hk] device
  int32_t H, Hk, G, D, L, w;
  int32_t k_type, k_bytes;
  int32_t chunks, chunk;  // pass 1: slices of `chunk` keys (a multiple of kTile)
  float scale;            // 1/sqrt(D), as the CPU computes it
  double norm;            // 1/(G·w)
  float* part_m;          // [Hk, R, chunks] each slice's max score of the row (−inf: none visible)
  float* part_l;          // [Hk, R, chunks] each slice's Σ exp(score − max)
  float* row_m;           // [Hk, R] the row's max score
  float* row_inv;         // [Hk, R] 1 / the row's Σ exp(score − max)
  float* attn;            // [Hk, L]
};
// Row r of KV head g (0 ≤ r < R = G·w) is query head g·G + r / w at window query i = r % w, which sees
// keys [0, L − w + i].

// Loads keys [j0, j0 + nb) of the head (kb: [L] entries) into Ks [kTile, D + 1] as floats, zero past nb. The
// padding makes lane j's reads of row j conflict-free.
__device__ __forceinline__ void load_keys(float* Ks, const WsArgs& a, const uint8_t* kb, int32_t j0, int nb) {
  entry::load_rows<kTile>(a.k_type, Ks, a.D + 1, kb, a.k_bytes, a.D, j0, nb);
}

// The warp's dot product of its staged query qs [D] with key `lane` of Ks, one lane per key: in index
// order with rounded, unfused operations, as kv/scorer.cc computes it on a CPU without FMA (the x86-64
// baseline), so that the scores agree bit for bit and only exp differs.
__device__ __forceinline__ float key_dot(const float* Ks, const float* qs, int D, int lane) {
  const float* kr = Ks + lane * (D + 1);
  float dot = 0.0f;
  for (int d = 0; d < D; d++) dot = __fadd_rn(dot, __fmul_rn(qs[d], kr[d]));
  return dot;
}

// Copies row r's query into the warp's buffer qs [D]. The first __syncwarp: every lane is done with the
// previous row's query; the second: the new one is complete.
__device__ __forceinline__ void stage_query(float* qs, const WsArgs& a, int g, int r, int lane) {
  const int h = g * a.G + r / a.w, i = r % a.w;
  const float* q = a.qw + (int64_t(i) * a.H + h) * a.D;
  __syncwarp();
  for (int d = lane; d < a.D; d += 32) qs[d] = q[d];
  __syncwarp();
}

// Pass 1: grid (chunks, ceil(R / kRowsPerBlock), Hk), kThreads threads. Shared: Ks [kTile, D + 1],
// Qs [kWarps, D] (each warp's current query). Warp w runs the rows rb0 + w, rb0 + w + kWarps, ...
__global__ void __launch_bounds__(kThreads) ws_stats_kernel(WsArgs a) {
  extern __shared__ float smem[];
  __shared__ float sm_m[kRowsPerBlock], sm_l[kRowsPerBlock];  // [rows] running max and sum of the block's rows
  const int D = a.D, R = a.G * a.w;
  const int c = blockIdx.x, g = blockIdx.z, rb0 = blockIdx.y * kRowsPerBlock;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float* Ks = smem;                                   // [kTile, D + 1]
  float* qs = smem + kTile * (D + 1) + warp * D;      // [D]
  const uint8_t* kb = a.k + a.offset[g] * a.k_bytes;  // [L] head g's key entries
  const int32_t c0 = c * a.chunk, c1 = min(a.L, c0 + a.chunk);
  for (int rr = threadIdx.x; rr < kRowsPerBlock; rr += blockDim.x) {
    sm_m[rr] = -INFINITY;
    sm_l[rr] = 0.0f;
  }
  for (int32_t j0 = c0; j0 < c1; j0 += kTile) {  // the same bounds for the whole block
    const int nb = min(kTile, c1 - j0);
    __syncthreads();  // the previous tile has been read (and sm_m / sm_l are initialised)
    load_keys(Ks, a, kb, j0, nb);
    __syncthreads();
    for (int rr = warp; rr < kRowsPerBlock; rr += kWarps) {  // warp-uniform loop
      const int r = rb0 + rr;
      if (r >= R) break;
      const int32_t vis = a.L - a.w + r % a.w + 1;  // keys the row sees
      if (j0 >= vis) continue;  // none of this tile; key j0 is visible otherwise, so tmax is finite below
      stage_query(qs, a, g, r, lane);
      const float dot = key_dot(Ks, qs, D, lane);
      const float s = lane < nb && j0 + lane < vis ? __fmul_rn(dot, a.scale) : -INFINITY;
      const float m_old = sm_m[rr];
      const float m_new = fmaxf(m_old, warp_max(s));
      const float l = sm_l[rr] * expf(m_old - m_new) + warp_sum(expf(s - m_new));
      __syncwarp();  // every lane has read sm_m[rr] and sm_l[rr]
      if (lane == 0) {
        sm_m[rr] = m_new;
        sm_l[rr] = l;
      }
    }
  }
  __syncthreads();
  for (int rr = threadIdx.x; rr < kRowsPerBlock; rr += blockDim.x) {
    const int r = rb0 + rr;
    if (r >= R) break;
    const int64_t pr = (int64_t(g) * R + r) * a.chunks + c;
    a.part_m[pr] = sm_m[rr];
    a.part_l[pr] = sm_l[rr];
  }
}

// Pass 1, merge: one thread per (KV head, row), over the slices. The sum in double and 1/sum as the CPU.
__global__ void __launch_bounds__(kThreads) ws_row_stats_kernel(WsArgs a) {
  const int64_t R = int64_t(a.G) * a.w;
  const int64_t gr = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;  // g·R + r
  if (gr >= int64_t(a.Hk) * R) return;
  const float* pm = a.part_m + gr * a.chunks;  // [chunks]
  const float* pl = a.part_l + gr * a.chunks;
  float M = -INFINITY;
  for (int c = 0; c < a.chunks; c++) M = fmaxf(M, pm[c]);
  double sum = 0;
  for (int c = 0; c < a.chunks; c++)
    if (pm[c] != -INFINITY) sum += double(pl[c]) * double(expf(pm[c] - M));
  a.row_m[gr] = M;
  a.row_inv[gr] = float(1.0 / sum);
}

// Pass 2: grid (ceil(L / kTile), Hk), kThreads threads: keys j0 .. j0 + 32 of head g, lane j owning key
// j0 + j; each warp sums in double the probabilities of its rows (w, w + kWarps, ...), then the warps' sums
// are added. Shared: Ks [kTile, D + 1], Qs [kWarps, D].
__global__ void __launch_bounds__(kThreads) ws_attn_kernel(WsArgs a) {
  extern __shared__ float smem[];
  __shared__ double acc_w[kWarps][kTile];  // [warps, keys] each warp's sums
  const int D = a.D, R = a.G * a.w;
  const int g = blockIdx.y;
  const int32_t j0 = blockIdx.x * kTile;
  const int nb = min(kTile, a.L - j0);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float* Ks = smem;
  float* qs = smem + kTile * (D + 1) + warp * D;
  const uint8_t* kb = a.k + a.offset[g] * a.k_bytes;
  load_keys(Ks, a, kb, j0, nb);
  __syncthreads();
  double acc = 0;  // Σ over the warp's rows of p(row, key j0 + lane)
  for (int r = warp; r < R; r += kWarps) {
    const int32_t vis = a.L - a.w + r % a.w + 1;
    if (j0 >= vis) continue;  // warp-uniform
    stage_query(qs, a, g, r, lane);
    const float dot = key_dot(Ks, qs, D, lane);
    if (lane < nb && j0 + lane < vis) {
      const int64_t gr = int64_t(g) * R + r;
      // The score rounded before the subtraction (no fused multiply-add), as in pass 1 and on the CPU.
      acc += double(expf(__fmul_rn(dot, a.scale) - a.row_m[gr]) * a.row_inv[gr]);
    }
  }
  acc_w[warp][lane] = acc;
  __syncthreads();
  if (warp == 0 && lane < nb) {
    double sum = 0;
    for (int w = 0; w < kWarps; w++) sum += acc_w[w][lane];
    a.attn[int64_t(g) * a.L + j0 + lane] = float(sum * a.norm);
  }
}

// Pass 3: score[g, j] = pool_at(attn[g, 0 .. n)), n = L − w. grid (ceil(n / kThreads), Hk).
__global__ void __launch_bounds__(kThreads)
    ws_pool_kernel(const float* attn, float* score, int32_t L, int32_t n, int kernel) {
  const int g = blockIdx.y;
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  score[int64_t(g) * n + j] = pool_at(attn + int64_t(g) * L, n, j, kernel);
}

}  // namespace

int window_scores(const float* qw, const folio_gpu_kv_layer* layer, int32_t n_head, int32_t L, int32_t w,
                  int32_t kernel, float* attn, float* score) {
  const folio_gpu_kv_layer Ly = *layer;
  const int Hk = Ly.n_head_kv, D = Ly.head_dim;
  if (L <= 0 || w <= 0 || n_head <= 0 || Hk <= 0) return 0;
  if (w > L) return fail("window_scores", "window longer than the prefix");
  if (n_head % Hk != 0) return fail("window_scores", "n_head is not a multiple of n_head_kv");
  if (D <= 0 || D > kMaxDim) return fail("window_scores", "head_dim above 256");
  if (int e = check_layer("window_scores", Ly)) return e;
  if (Hk > 65535) return fail("window_scores", "too many KV heads");
  const int G = n_head / Hk;
  const int64_t R = int64_t(G) * w;  // window rows per KV head
  if (R > (int64_t(1) << 30)) return fail("window_scores", "too many window rows");

  // Pass-1 slices: enough blocks for about four per SM, whole tiles each, none empty.
  const int64_t row_groups = (R + kRowsPerBlock - 1) / kRowsPerBlock;
  if (row_groups > 65535) return fail("window_scores", "too many window rows");
  const int64_t tiles = (int64_t(L) + kTile - 1) / kTile;
  const int64_t base = row_groups * Hk, want = 4 * int64_t(multiprocessors());
  int64_t chunks = base >= want ? 1 : (want + base - 1) / base;
  chunks = chunks < tiles ? chunks : tiles;
  const int64_t chunk = ((L + chunks - 1) / chunks + kTile - 1) / kTile * kTile;
  chunks = (L + chunk - 1) / chunk;

  WsArgs a{};
  a.qw = qw;
  a.k = static_cast<const uint8_t*>(Ly.k);
  a.k_type = Ly.k_type;
  a.k_bytes = Ly.k_bytes;
  a.offset = Ly.offset;
  a.H = n_head;
  a.Hk = Hk;
  a.G = G;
  a.D = D;
  a.L = L;
  a.w = w;
  a.chunks = int32_t(chunks);
  a.chunk = int32_t(chunk);
  a.scale = 1.0f / std::sqrt(float(D));
  a.norm = 1.0 / (double(G) * double(w));
  a.attn = attn;
  const size_t parts = size_t(Hk) * size_t(R) * size_t(chunks), rows = size_t(Hk) * size_t(R);
  auto* buf = static_cast<float*>(scratch(Scratch::Scores, (2 * parts + 2 * rows) * sizeof(float)));
  if (!buf) return 1;
  a.part_m = buf;               // [Hk, R, chunks]
  a.part_l = a.part_m + parts;  // [Hk, R, chunks]
  a.row_m = a.part_l + parts;   // [Hk, R]
  a.row_inv = a.row_m + rows;   // [Hk, R]

  const size_t smem = sizeof(float) * (size_t(kTile) * (D + 1) + size_t(kWarps) * D);  // Ks and Qs
  const dim3 grid1{unsigned(chunks), unsigned(row_groups), unsigned(Hk)};
  ws_stats_kernel<<<grid1, kThreads, smem, stream()>>>(a);
  if (int e = check_launch("window_scores (row stats)")) return e;
  ws_row_stats_kernel<<<unsigned((rows + kThreads - 1) / kThreads), kThreads, 0, stream()>>>(a);
  if (int e = check_launch("window_scores (row stats merge)")) return e;
  const dim3 grid2{unsigned(tiles), unsigned(Hk)};
  ws_attn_kernel<<<grid2, kThreads, smem, stream()>>>(a);
  if (int e = check_launch("window_scores (attention)")) return e;
  const int32_t n = L - w;
  if (n > 0) {
    const dim3 grid3{unsigned((n + kThreads - 1) / kThreads), unsigned(Hk)};
    ws_pool_kernel<<<grid3, kThreads, 0, stream()>>>(attn, score, L, n, kernel);
    if (int e = check_launch("window_scores (max pool)")) return e;
  }
  return 0;
}

}  // namespace folio::cuda
