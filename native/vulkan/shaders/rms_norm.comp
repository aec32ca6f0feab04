#version 450
// One group per row: y[t, i] = x[t, i] / sqrt(mean_i x[t, i]² + eps) · g[i]     x, y: [n, width] (may alias:
// the whole row is summed before any element is written, and each element is rewritten by its reader).
// The sum of squares is in float (shaderFloat64 is rare outside desktop GPUs), each invocation over a
// stride of the row, then a tree in shared memory.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { Floats x; Floats g; Floats y; int n; int width; float eps; } p;
shared float part[256];
void main() {
  const int row = flat_group();
  if (row >= p.n) return;
  const int base = row * p.width, tid = int(gl_LocalInvocationID.x);
  float sum = 0.0;
  for (int i = tid; i < p.width; i += 256) {
    const float v = p.x.v[base + i];
    sum += v * v;
  }
  part[tid] = sum;
  barrier();
  for (int s = 128; s > 0; s >>= 1) {
    if (tid < s) part[tid] += part[tid + s];
    barrier();
  }
  const float scale = 1.0 / sqrt(part[0] / float(p.width) + p.eps);
  for (int i = tid; i < p.width; i += 256) p.y.v[base + i] = p.x.v[base + i] * scale * p.g.v[i];
}
