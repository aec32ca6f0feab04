#version 450
// h[i] = silu(g[i]) · u[i] for i < count (h may alias g: each element is read, then written, by one invocation).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { Floats g; Floats u; Floats h; int count; } p;
void main() {
  const int i = flat_index();
  if (i >= p.count) return;
  const float gi = p.g.v[i];
  p.h.v[i] = gi / (1.0 + exp(-gi)) * p.u.v[i];
}
