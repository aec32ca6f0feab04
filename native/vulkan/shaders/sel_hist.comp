#version 450
// Radix select, one digit: the histogram of the digit at `shift` of the elements whose higher digits match
// their segment's prefix, one invocation per element of score [Hk, n]. Segment: the head (per_head) or 0.
// Tie-break index: the token (per_head), else token·Hk + head. hist: [segments, 256], zero before.
#include "common.glsl"
#include "select.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { Floats score; Segments seg; Uints hist; int Hk, n, per_head, shift; } p;
void main() {
  const int idx = flat_index();
  if (idx >= p.Hk * p.n) return;
  const int g = idx / p.n, j = idx % p.n, s = p.per_head != 0 ? g : 0;
  if (p.seg.s[s].remaining == 0u) return;
  const uint64_t c = composite(p.score.v[idx], p.per_head != 0 ? uint(j) : uint(j) * uint(p.Hk) + uint(g));
  if (p.shift < 56 && (c >> (p.shift + 8)) != (p.seg.s[s].prefix >> (p.shift + 8))) return;
  atomicAdd(p.hist.v[s * 256 + int((c >> p.shift) & 255ul)], 1u);
}
