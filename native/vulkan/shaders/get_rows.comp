#version 450
// out[t, :] = the cols values of row ids[t] of W, one invocation per group of 8 elements.
// W: rows of `type`, ldw bytes apart; ids: [n]; out: [n, cols].
#include "common.glsl"
#include "dequant.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { uint64_t w; Ints ids; Floats out_; int64_t ldw; int n, cols, type; } p;
void main() {
  const int groups = (p.cols + 7) / 8, i = flat_index();
  if (i >= p.n * groups) return;
  const int t = i / groups, g = i % groups;
  float v[8];
  dequant8(p.w + uint64_t(p.ids.v[t]) * uint64_t(p.ldw), p.type, g, p.cols, v);
  const int base = t * p.cols + 8 * g;
  for (int k = 0; k < 8 && 8 * g + k < p.cols; k++) p.out_.v[base + k] = v[k];
}
