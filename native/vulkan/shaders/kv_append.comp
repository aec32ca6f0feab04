#version 450
// Appends n tokens to every head of a layer after its current len entries, one group per (token, KV head):
// entry offset[g] + len[g] + t takes k[t, g·D ..], v[t, g·Dv ..] (converted to kv_type) and pos[t]. The
// lengths are advanced afterwards by kv_lengths.comp, in a dispatch of its own (every group reads them here).
#include "common.glsl"
#include "kv.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push {
  uint64_t kc, vc;  // the cache's k [capacity, D], v [capacity, Dv]
  Ints pos_c;       // [capacity]
  Int64s offset;    // [Hk]
  Ints len;         // [Hk]
  Floats k, v;      // [n, Hk·D], [n, Hk·Dv]
  Ints pos;         // [n]
  int n, Hk, D, Dv, kv_type;
} p;
void main() {
  const int item = flat_group();
  if (item >= p.n * p.Hk) return;
  const int t = item / p.Hk, g = item % p.Hk, tid = int(gl_LocalInvocationID.x);
  const int64_t e = p.offset.v[g] + int64_t(p.len.v[g]) + int64_t(t);
  const uint64_t kr = kv_row(p.kc, p.kv_type, e, p.D), vr = kv_row(p.vc, p.kv_type, e, p.Dv);
  for (int d = tid; d < p.D; d += 64) kv_store(kr, p.kv_type, d, p.k.v[(t * p.Hk + g) * p.D + d]);
  for (int d = tid; d < p.Dv; d += 64) kv_store(vr, p.kv_type, d, p.v.v[(t * p.Hk + g) * p.Dv + d]);
  if (tid == 0) Ints(uint64_t(p.pos_c) + 4ul * uint64_t(e)).v[0] = p.pos.v[t];
}
