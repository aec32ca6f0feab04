#version 450
// Causal attention of m new queries over a layer whose len already includes their m entries, part 1 of 2
// (attention_merge.comp is part 2): query t of head h reads KV head g = h / (n_head / Hk), entries
// [0, len[g] − m + t] (with a sliding window, n_swa > 0: only those from the window's first, sliding.glsl),
// split into S slices of equal length (flash decoding: a decode step has only
// n_head queries, and the lengths are on the device, so the split is by count). One group of 64 per
// (query t, head h) and slice (gl_WorkGroupID.z): keys in tiles of 64, one invocation per key for the
// score (q·k · 1/sqrt(D), the query staged in shared memory), an online softmax (running max and sum,
// rescaled per tile), and each invocation accumulates its output dims d = tid, tid + 64, ... (Dv ≤ 256).
// q: [m, n_head·D]; part: [m·n_head, S, 2 + Dv] = the slice's max, sum and unnormalized output.
#include "common.glsl"
#include "dequant.glsl"
#include "kv.glsl"
#include "sliding.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push {
  uint64_t kc, vc;  // k [capacity] entries of kb bytes (D numbers of k_type), v [capacity] of vb (Dv of v_type)
  Int64s offset;    // [Hk]
  Ints len;         // [Hk]
  uint64_t posc;    // [capacity] int: each entry's position
  Floats q, part;
  int m, n_head, Hk, D, Dv, k_type, v_type, kb, vb, S;
  float scale;  // 1/sqrt(D)
  int n_swa;    // the sliding window, 0: none
} p;
shared float qs[256];  // [D] the query
shared float ps[64];   // [tile] the tile's softmax weights exp(s − max)
shared float red[64];  // reductions
void main() {
  const int item = flat_group();
  if (item >= p.m * p.n_head) return;
  const int t = item / p.n_head, h = item % p.n_head, g = h / (p.n_head / p.Hk), tid = int(gl_LocalInvocationID.x);
  const int visible = p.len.v[g] - p.m + t + 1, slice = int(gl_WorkGroupID.z);
  const int64_t off = p.offset.v[g];
  Ints pos = Ints(p.posc + uint64_t(off) * 4ul);  // [len] head g's positions, ascending
  const int first = visible > 0 ? first_in_window(pos, visible, pos.v[visible - 1], p.n_swa) : 0;
  const int per = (max(visible - first, 0) + p.S - 1) / p.S, lo = first + slice * per, hi = min(visible, lo + per);
  for (int d = tid; d < p.D; d += 64) qs[d] = p.q.v[(t * p.n_head + h) * p.D + d];
  barrier();
  float mx = -1.0 / 0.0, sum = 0.0;
  float acc[4] = float[4](0, 0, 0, 0);
  for (int j0 = lo; j0 < hi; j0 += 64) {
    const int j = j0 + tid;
    float s = -1.0 / 0.0;
    if (j < hi) {
      const uint64_t row = kv_row(p.kc, off + j, p.kb);
      float dot = 0.0;
      for (int d = 0; d < p.D; d++) dot += qs[d] * kv_load(row, p.k_type, p.D, d);
      s = dot * p.scale;
    }
    red[tid] = s;
    barrier();
    for (int w = 32; w > 0; w >>= 1) {
      if (tid < w) red[tid] = max(red[tid], red[tid + w]);
      barrier();
    }
    const float nmx = max(mx, red[0]);
    const float corr = mx == -1.0 / 0.0 ? 0.0 : exp(mx - nmx);
    barrier();  // every invocation has read red[0]
    const float pj = j < hi ? exp(s - nmx) : 0.0;
    ps[tid] = pj;
    red[tid] = pj;
    barrier();
    for (int w = 32; w > 0; w >>= 1) {
      if (tid < w) red[tid] += red[tid + w];
      barrier();
    }
    sum = sum * corr + red[0];
    const int nj = min(64, hi - j0);
    for (int i = 0; i < 4; i++) {
      const int d = tid + 64 * i;
      if (d >= p.Dv) break;
      float a = acc[i] * corr;
      for (int jj = 0; jj < nj; jj++) a += ps[jj] * kv_load(kv_row(p.vc, off + j0 + jj, p.vb), p.v_type, p.Dv, d);
      acc[i] = a;
    }
    mx = nmx;
    barrier();  // ps and red are rewritten by the next tile
  }
  const int base = (item * p.S + slice) * (2 + p.Dv);
  if (tid == 0) {
    p.part.v[base] = mx;
    p.part.v[base + 1] = sum;
  }
  for (int i = 0; i < 4; i++) {
    const int d = tid + 64 * i;
    if (d < p.Dv) p.part.v[base + 2 + d] = acc[i];
  }
}
