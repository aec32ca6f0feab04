#version 450
// topk_per_head, last step: won[g] += the selected elements of head g (composite ≥ the k-th largest), one
// invocation per element of score [Hk, n].
#include "common.glsl"
#include "select.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { Floats score; Segments seg; Uints won; int Hk, n; } p;
void main() {
  const int idx = flat_index();
  if (idx >= p.Hk * p.n || p.seg.s[0].remaining == 0u) return;
  const int g = idx / p.n, j = idx % p.n;
  if (composite(p.score.v[idx], uint(j) * uint(p.Hk) + uint(g)) >= p.seg.s[0].prefix) atomicAdd(p.won.v[g], 1u);
}
