#version 450
// Appends n tokens to every head of a layer after its current len entries, one group per (token, KV head):
// entry offset[g] + len[g] + t takes k[t, g·D ..] (converted to k_type), v[t, g·Dv ..] (to v_type) and
// pos[t]. F32/F16: one invocation per number; Q8_0/Q4_0: one per block of 32 (kv_store_block), as the CPU
// quantizes a block in order. The lengths are advanced afterwards by kv_lengths.comp, in a dispatch of its
// own (every group reads them here).
#include "common.glsl"
#include "dequant.glsl"
#include "kv.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push {
  uint64_t kc, vc;  // the cache's k [capacity] entries of kb bytes, v [capacity] of vb
  Ints pos_c;       // [capacity]
  Int64s offset;    // [Hk]
  Ints len;         // [Hk]
  Floats k, v;      // [n, Hk·D], [n, Hk·Dv]
  Ints pos;         // [n]
  int n, Hk, D, Dv, k_type, v_type, kb, vb;
} p;
// The numbers of one (token, head) into its entry at `row`.
void store_entry(uint64_t row, int type, int dim, Floats src, int base, int tid) {
  if (type == T_F32 || type == T_F16) {
    for (int d = tid; d < dim; d += 64) kv_store(row, type, d, src.v[base + d]);
  } else {
    for (int b = tid; 32 * b < dim; b += 64) kv_store_block(row, type, dim, b, src, base);
  }
}
void main() {
  const int item = flat_group();
  if (item >= p.n * p.Hk) return;
  const int t = item / p.Hk, g = item % p.Hk, tid = int(gl_LocalInvocationID.x);
  const int64_t e = p.offset.v[g] + int64_t(p.len.v[g]) + int64_t(t);
  store_entry(kv_row(p.kc, e, p.kb), p.k_type, p.D, p.k, (t * p.Hk + g) * p.D, tid);
  store_entry(kv_row(p.vc, e, p.vb), p.v_type, p.Dv, p.v, (t * p.Hk + g) * p.Dv, tid);
  if (tid == 0) Ints(uint64_t(p.pos_c) + 4ul * uint64_t(e)).v[0] = p.pos.v[t];
}
