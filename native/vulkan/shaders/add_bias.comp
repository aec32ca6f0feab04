#version 450
// x[t, i] += b[i]     x: [n, width] (count = n·width elements); b: [width].
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { Floats x; Floats b; int count; int width; } p;
void main() {
  const int i = flat_index();
  if (i < p.count) p.x.v[i] += p.b.v[i % p.width];
}
