// Causal attention over the flat variable-length KV cache (backend/attention.cc is the CPU version; its
// attention_reference the obviously-correct one).
//
// Flash style on CUDA cores. A block takes a tile of rows of one KV head g, a row being one (query t,
// query head hh) pair of g's group (r = t·G + hh), and streams over g's entries in tiles of 32 keys:
// the tile's keys go to shared memory, lane j of every warp computes the scores of key j for the warp's
// rows, the rows' running max and sum are updated (online softmax, float32), then the same buffer takes
// the tile's values and each lane accumulates its share of the output dims. No score matrix over the
// sequence ever exists.
//
// Split-K (flash decoding): when the rows alone give too few blocks to fill the GPU (decode: m·G rows
// per KV head), each block takes only one of `splits` slices of the key range and writes its unnormalised
// output with its max and sum; a second kernel merges the slices. The host does not know the lengths
// (they live on the device), so the slices are fractions of each block's own key range.
//
// A sliding window (n_swa > 0, sliding-window.cuh) masks each row's keys by position; a block's key range
// starts at its first row's oldest visible key (the later rows' windows start no earlier).
//
// Keys and values may be of any of the cache types, each its own (kv-entry.cuh): a tile is converted to
// float as it is loaded to shared memory, by a branch on the type per tile, so the rest of the kernel is the
// same for all.
#include <cuda_fp16.h>

#include <cmath>

#include "kv-entry.cuh"
#include "ops.h"
#include "sliding-window.cuh"
#include "warp.cuh"

namespace folio::cuda {

namespace {

constexpr int kTile = 32;  // keys per tile: one per lane
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxDim = 256;              // head_dim and head_dim_v
constexpr int kMaxDvLane = kMaxDim / 32;  // output dims per lane
constexpr int kMaxSplits = 64;
constexpr size_t kSmemLimit = 48 * 1024;  // without opting in, on every architecture

struct AttnArgs {
  const float* q;         // [m, H·D]
  const uint8_t* k;       // the layer's keys: [capacity] entries of k_bytes (D numbers of k_type)
  const uint8_t* v;       // [capacity] entries of v_bytes (Dv numbers of v_type)
  const int64_t* offset;  // [Hk] device
  const int32_t* len;     // [Hk] device
  const int32_t* pos;     // [capacity] device: each entry's position
  float* out;             // [m, H·Dv]
  float* part_o;          // [splits, Hk, R, Dv] unnormalised slice outputs (splits > 1)
  float* part_m;          // [splits, Hk, R] each slice's max score (−inf: the slice saw no key)
  float* part_l;          // [splits, Hk, R] each slice's Σ exp(score − max)
  int32_t m, H, Hk, G, D, Dv, splits;
  int32_t k_type, v_type, k_bytes, v_bytes;
  int32_t n_swa;  // the sliding window, 0: none
  float scale;    // 1/sqrt(D), computed as the CPU does
};

// grid (ceil(R / (kWarps·RW)), splits, Hk), kThreads threads; warp w owns rows r0 + w·RW .. + RW. Quant: the
// keys or the values are quantized (the F32/F16 kernel is built without those readers: fewer registers).
// Shared memory: Qs [kWarps·RW, D] the rows' queries, then KV [kTile, D + 1] (keys; the padding makes lane j's
// reads of row j conflict-free) reused as [kTile, Dv] (values).
template <int RW, bool Quant>
__global__ void __launch_bounds__(kThreads) attention_kernel(AttnArgs a) {
  extern __shared__ float smem[];
  constexpr int RB = kWarps * RW;  // rows per block
  const int D = a.D, Dv = a.Dv, G = a.G;
  const int R = a.m * G;  // rows of KV head g
  const int g = blockIdx.z, split = blockIdx.y;
  const int r0 = blockIdx.x * RB;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int ldk = D + 1;
  float* Qs = smem;           // [RB, D]
  float* KV = smem + RB * D;  // [kTile, D + 1] keys, then [kTile, Dv] values

  const int64_t off = a.offset[g];
  const int32_t before = a.len[g] - a.m;  // entries older than this call's queries
  const int32_t* kpos = a.pos + off;      // [len] head g's positions, ascending
  // The block's last row sees the most keys, its first row the oldest; its slice of them, in whole tiles.
  const int r_last = min(r0 + RB, R) - 1;
  const int32_t n_keys = max(0, before + r_last / G + 1);
  const int32_t own0 = before + r0 / G;  // the first row's own entry
  const int32_t k_lo = own0 >= 0 ? first_in_window(kpos, own0 + 1, kpos[own0], a.n_swa) : 0;
  const int32_t per_split = ((n_keys - k_lo + a.splits - 1) / a.splits + kTile - 1) / kTile * kTile;
  const int32_t k0 = k_lo + split * per_split, k1 = min(n_keys, k0 + per_split);

  for (int idx = threadIdx.x; idx < RB * D; idx += kThreads) {
    const int rr = idx / D, d = idx - rr * D, r = r0 + rr;
    float x = 0.0f;
    if (r < R) x = a.q[(int64_t(r / G) * a.H + g * G + r % G) * D + d];
    Qs[idx] = x;
  }

  // Per row of this warp: keys it may see (0 past the last row), running max, running sum, output dims
  // lane + 32·k (all lanes hold the same max and sum).
  int32_t vis[RW], qpos[RW];  // keys [0, vis) by index, and of those the window's by position qpos
  float mrow[RW], lrow[RW], o[RW][kMaxDvLane];
#pragma unroll
  for (int rr = 0; rr < RW; rr++) {
    const int r = r0 + warp * RW + rr;
    vis[rr] = r < R ? before + r / G + 1 : 0;
    qpos[rr] = r < R ? kpos[before + r / G] : 0;
    mrow[rr] = -INFINITY;
    lrow[rr] = 0.0f;
#pragma unroll
    for (int k = 0; k < kMaxDvLane; k++) o[rr][k] = 0.0f;
  }

  const uint8_t* kb = a.k + off * a.k_bytes;     // [len] head g's key entries
  const uint8_t* vb = a.v + off * a.v_bytes;     // [len] its value entries
  const float* qw = Qs + warp * RW * D;          // [RW, D] this warp's rows
  for (int32_t j0 = k0; j0 < k1; j0 += kTile) {  // k0, k1 are the same for the whole block
    const int nb = min(kTile, k1 - j0);
    __syncthreads();  // the queries are stored / the previous tile's values have been read
    entry::load_rows<kTile, Quant>(a.k_type, KV, ldk, kb, a.k_bytes, D, j0, nb);
    __syncthreads();
    // Scores of key j0 + lane for the warp's rows, masked to what each row may see.
    float s[RW];
    {
      float dot[RW];
#pragma unroll
      for (int rr = 0; rr < RW; rr++) dot[rr] = 0.0f;
      const float* kr = KV + lane * ldk;
      for (int d = 0; d < D; d++) {
        const float kd = kr[d];
#pragma unroll
        for (int rr = 0; rr < RW; rr++) dot[rr] += qw[rr * D + d] * kd;
      }
      const int32_t p_key = lane < nb ? kpos[j0 + lane] : 0;
#pragma unroll
      for (int rr = 0; rr < RW; rr++)
        s[rr] = lane < nb && j0 + lane < vis[rr] && in_window(qpos[rr], p_key, a.n_swa) ? dot[rr] * a.scale : -INFINITY;
    }
    __syncthreads();  // every warp is done with the keys: the buffer takes the values
    entry::load_rows<kTile, Quant>(a.v_type, KV, Dv, vb, a.v_bytes, Dv, j0, nb);
    __syncthreads();
    // Online softmax: a row that sees none of the tile keeps its state (p = 0, carry = 1).
    float p[RW];
#pragma unroll
    for (int rr = 0; rr < RW; rr++) {
      const float tmax = warp_max(s[rr]);
      float carry = 1.0f;
      p[rr] = 0.0f;
      if (tmax != -INFINITY) {  // the same in every lane
        const float new_m = fmaxf(mrow[rr], tmax);
        carry = expf(mrow[rr] - new_m);  // 0 on the row's first visible tile (mrow = −inf)
        p[rr] = expf(s[rr] - new_m);     // 0 for masked keys
        lrow[rr] = lrow[rr] * carry + warp_sum(p[rr]);
        mrow[rr] = new_m;
      }
#pragma unroll
      for (int k = 0; k < kMaxDvLane; k++) o[rr][k] *= carry;
    }
    for (int j = 0; j < nb; j++) {
      const float* vr = KV + j * Dv;
      float vj[kMaxDvLane];
#pragma unroll
      for (int k = 0; k < kMaxDvLane; k++) {
        const int d = lane + 32 * k;
        vj[k] = d < Dv ? vr[d] : 0.0f;
      }
#pragma unroll
      for (int rr = 0; rr < RW; rr++) {
        const float pj = __shfl_sync(0xffffffffu, p[rr], j);
#pragma unroll
        for (int k = 0; k < kMaxDvLane; k++) o[rr][k] += pj * vj[k];
      }
    }
  }

#pragma unroll
  for (int rr = 0; rr < RW; rr++) {
    const int r = r0 + warp * RW + rr;
    if (r >= R) continue;
    const int t = r / G, h = g * G + r % G;
    if (a.splits == 1) {
      const float inv = lrow[rr] > 0.0f ? 1.0f / lrow[rr] : 0.0f;
      float* orow = a.out + (int64_t(t) * a.H + h) * Dv;  // [Dv]
#pragma unroll
      for (int k = 0; k < kMaxDvLane; k++) {
        const int d = lane + 32 * k;
        if (d < Dv) orow[d] = o[rr][k] * inv;
      }
    } else {
      const int64_t pr = (int64_t(split) * a.Hk + g) * R + r;
      float* po = a.part_o + pr * Dv;  // [Dv]
#pragma unroll
      for (int k = 0; k < kMaxDvLane; k++) {
        const int d = lane + 32 * k;
        if (d < Dv) po[d] = o[rr][k];
      }
      if (lane == 0) {
        a.part_m[pr] = mrow[rr];
        a.part_l[pr] = lrow[rr];
      }
    }
  }
}

// Merges the slices of row r of KV head g: grid (R, Hk), kThreads threads over the output dims.
// out = Σ_s o_s·exp(m_s − M) / Σ_s l_s·exp(m_s − M), M = max_s m_s; slices that saw no key weigh 0.
__global__ void __launch_bounds__(kThreads) attention_combine_kernel(AttnArgs a) {
  __shared__ float wgt[kMaxSplits];  // [splits] each slice's weight exp(m_s − M)
  __shared__ float total;            // Σ_s l_s·wgt_s
  const int r = blockIdx.x, g = blockIdx.y;
  const int R = a.m * a.G, S = a.splits;
  if (threadIdx.x == 0) {
    float M = -INFINITY;
    for (int s = 0; s < S; s++) M = fmaxf(M, a.part_m[(int64_t(s) * a.Hk + g) * R + r]);
    float l = 0.0f;
    for (int s = 0; s < S; s++) {
      const int64_t pr = (int64_t(s) * a.Hk + g) * R + r;
      const float ms = a.part_m[pr];
      wgt[s] = ms == -INFINITY ? 0.0f : expf(ms - M);
      l += a.part_l[pr] * wgt[s];
    }
    total = l;
  }
  __syncthreads();
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  const int t = r / a.G, h = g * a.G + r % a.G;
  float* orow = a.out + (int64_t(t) * a.H + h) * a.Dv;  // [Dv]
  for (int d = threadIdx.x; d < a.Dv; d += blockDim.x) {
    float acc = 0.0f;
    for (int s = 0; s < S; s++) acc += a.part_o[((int64_t(s) * a.Hk + g) * R + r) * a.Dv + d] * wgt[s];
    orow[d] = acc * inv;
  }
}

size_t smem_bytes(int rw, int D, int Dv) {
  return sizeof(float) * (size_t(kWarps) * rw * D + size_t(kTile) * size_t(D + 1 > Dv ? D + 1 : Dv));
}

template <bool Quant>
void launch(int rw, dim3 grid, size_t smem, const AttnArgs& a) {
  if (rw == 1) attention_kernel<1, Quant><<<grid, kThreads, smem, stream()>>>(a);
  else if (rw == 2) attention_kernel<2, Quant><<<grid, kThreads, smem, stream()>>>(a);
  else attention_kernel<4, Quant><<<grid, kThreads, smem, stream()>>>(a);
}

}  // namespace

int attention(const float* q, const folio_gpu_kv_layer* layer, int32_t m, int32_t n_head, int32_t n_swa, float* out) {
  const folio_gpu_kv_layer L = *layer;
  if (m <= 0 || n_head <= 0 || L.n_head_kv <= 0) return 0;
  const int Hk = L.n_head_kv, D = L.head_dim, Dv = L.head_dim_v;
  if (n_head % Hk != 0) return fail("attention", "n_head is not a multiple of n_head_kv");
  if (D <= 0 || D > kMaxDim || Dv <= 0 || Dv > kMaxDim) return fail("attention", "head_dim above 256");
  if (int e = check_layer("attention", L)) return e;
  if (Hk > 65535) return fail("attention", "too many KV heads");
  const int G = n_head / Hk;
  const int64_t R = int64_t(m) * G;  // rows per KV head
  if (R > (int64_t(1) << 30)) return fail("attention", "too many queries");

  // Rows per warp: fewer when there are few rows (decode), and as many as shared memory allows.
  int rw = R <= kWarps ? 1 : R <= 2 * kWarps ? 2 : 4;
  while (rw > 1 && smem_bytes(rw, D, Dv) > kSmemLimit) rw /= 2;
  const size_t smem = smem_bytes(rw, D, Dv);
  const int64_t row_tiles = (R + kWarps * rw - 1) / (kWarps * rw);
  // Split the keys when the row tiles alone would leave SMs idle: aim at two blocks per SM.
  const int64_t blocks = row_tiles * Hk, want = 2 * int64_t(multiprocessors());
  int splits = blocks >= want ? 1 : int((want + blocks - 1) / blocks);
  splits = splits < kMaxSplits ? splits : kMaxSplits;

  AttnArgs a{};
  a.q = q;
  a.k = static_cast<const uint8_t*>(L.k);
  a.v = static_cast<const uint8_t*>(L.v);
  a.k_type = L.k_type;
  a.v_type = L.v_type;
  a.k_bytes = L.k_bytes;
  a.v_bytes = L.v_bytes;
  a.offset = L.offset;
  a.len = L.len;
  a.pos = L.pos;
  a.n_swa = n_swa;
  a.out = out;
  a.m = m;
  a.H = n_head;
  a.Hk = Hk;
  a.G = G;
  a.D = D;
  a.Dv = Dv;
  a.splits = splits;
  a.scale = 1.0f / std::sqrt(float(D));
  if (splits > 1) {
    const size_t rows = size_t(splits) * size_t(Hk) * size_t(R);
    auto* part = static_cast<float*>(scratch(Scratch::Scores, rows * (size_t(Dv) + 2) * sizeof(float)));
    if (!part) return 1;
    a.part_o = part;              // [splits, Hk, R, Dv]
    a.part_m = part + rows * Dv;  // [splits, Hk, R]
    a.part_l = a.part_m + rows;   // [splits, Hk, R]
  }

  const dim3 grid{unsigned(row_tiles), unsigned(splits), unsigned(Hk)};
  if (entry::type_quantized(L.k_type) || entry::type_quantized(L.v_type)) launch<true>(rw, grid, smem, a);
  else launch<false>(rw, grid, smem, a);
  if (int e = check_launch("attention")) return e;
  if (splits > 1) {
    attention_combine_kernel<<<dim3(unsigned(R), unsigned(Hk)), kThreads, 0, stream()>>>(a);
    if (int e = check_launch("attention (combine)")) return e;
  }
  return 0;
}

}  // namespace folio::cuda
