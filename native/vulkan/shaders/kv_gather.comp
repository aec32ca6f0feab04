#version 450
// Compaction of one KV head g (one dispatch per head): dst entries offset_dst[g] + i, i < cnt, become src
// entries offset_src[g] + keep[start + i] (k, v and pos, bytes as they are), one group per entry.
// Entries are copied in units of ku / vu bytes (4, 2 or 1: what divides the entry size and both arrays'
// addresses; a quantized entry may be an odd number of bytes), so a NaN's bits are kept.
#include "common.glsl"
#include "dequant.glsl"
#include "kv.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push {
  uint64_t sk, sv, dk, dv;  // k [capacity] entries of kb bytes, v [capacity] of vb, of src and dst
  Ints spos, dpos;          // [capacity]
  Int64s soff, doff;        // [Hk]
  Ints keep;                // [Σ cnt]
  int64_t start;            // head g's first index into keep
  int g, cnt, kb, vb, ku, vu;
} p;
// `bytes` bytes from s to d in units of u, the group's invocations strided.
void copy_entry(uint64_t s, uint64_t d, int bytes, int u, int tid) {
  if (u == 4) {
    for (int i = tid; i < bytes / 4; i += 64) Ints(d).v[i] = Ints(s).v[i];
  } else if (u == 2) {
    for (int i = tid; i < bytes / 2; i += 64) Halves(d).v[i] = Halves(s).v[i];
  } else {
    for (int i = tid; i < bytes; i += 64) Bytes(d).v[i] = Bytes(s).v[i];
  }
}
void main() {
  const int i = flat_group();
  if (i >= p.cnt) return;
  const int tid = int(gl_LocalInvocationID.x);
  const int64_t from = p.soff.v[p.g] + int64_t(Ints(uint64_t(p.keep) + 4ul * uint64_t(p.start)).v[i]);
  const int64_t to = p.doff.v[p.g] + int64_t(i);
  copy_entry(kv_row(p.sk, from, p.kb), kv_row(p.dk, to, p.kb), p.kb, p.ku, tid);
  copy_entry(kv_row(p.sv, from, p.vb), kv_row(p.dv, to, p.vb), p.vb, p.vu, tid);
  if (tid == 0) Ints(uint64_t(p.dpos) + 4ul * uint64_t(to)).v[0] = Ints(uint64_t(p.spos) + 4ul * uint64_t(from)).v[0];
}
