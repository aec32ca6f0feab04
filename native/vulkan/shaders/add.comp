#version 450
// x[i] += y[i] for i < count.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { Floats x; Floats y; int count; } p;
void main() {
  const int i = flat_index();
  if (i < p.count) p.x.v[i] += p.y.v[i];
}
