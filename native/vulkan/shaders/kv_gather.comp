#version 450
// Compaction of one KV head g (one dispatch per head): dst entries offset_dst[g] + i, i < cnt, become src
// entries offset_src[g] + keep[start + i] (k, v and pos, bytes as they are), one group per entry.
#include "common.glsl"
#include "kv.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push {
  uint64_t sk, sv, dk, dv;  // k [capacity, D], v [capacity, Dv] of src and dst
  Ints spos, dpos;          // [capacity]
  Int64s soff, doff;        // [Hk]
  Ints keep;                // [Σ cnt]
  int64_t start;            // head g's first index into keep
  int g, cnt, D, Dv, kv_type;
} p;
void main() {
  const int i = flat_group();
  if (i >= p.cnt) return;
  const int tid = int(gl_LocalInvocationID.x);
  const int64_t from = p.soff.v[p.g] + int64_t(Ints(uint64_t(p.keep) + 4ul * uint64_t(p.start)).v[i]);
  const int64_t to = p.doff.v[p.g] + int64_t(i);
  const uint64_t ks = kv_row(p.sk, p.kv_type, from, p.D), kd = kv_row(p.dk, p.kv_type, to, p.D);
  const uint64_t vs = kv_row(p.sv, p.kv_type, from, p.Dv), vd = kv_row(p.dv, p.kv_type, to, p.Dv);
  // The bytes as they are: F16 values as 16-bit words, F32 as 32-bit ones (a NaN's bits kept).
  if (p.kv_type == 1) {
    for (int d = tid; d < p.D; d += 64) Halves(kd).v[d] = Halves(ks).v[d];
    for (int d = tid; d < p.Dv; d += 64) Halves(vd).v[d] = Halves(vs).v[d];
  } else {
    for (int d = tid; d < p.D; d += 64) Ints(kd).v[d] = Ints(ks).v[d];
    for (int d = tid; d < p.Dv; d += 64) Ints(vd).v[d] = Ints(vs).v[d];
  }
  if (tid == 0) Ints(uint64_t(p.dpos) + 4ul * uint64_t(to)).v[0] = Ints(uint64_t(p.spos) + 4ul * uint64_t(from)).v[0];
}
