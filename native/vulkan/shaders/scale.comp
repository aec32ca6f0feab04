#version 450
// x[i] *= s for i < count (one rounded product, as the CPU's: the results are equal).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { Floats x; float s; int count; } p;
void main() {
  const int i = flat_index();
  if (i >= p.count) return;
  precise float y = p.x.v[i] * p.s;
  p.x.v[i] = y;
}
