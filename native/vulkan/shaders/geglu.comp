#version 450
// h[i] = gelu(g[i]) · u[i] for i < count, GELU's tanh form as cpu::gelu_tanh (backend/cpu-ops.cc): the
// formula's constants √(2/π) and 0.044715 (Hendrycks & Gimpel 2016). h may alias g: each element is read,
// then written, by one invocation.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { Floats g; Floats u; Floats h; int count; } p;
void main() {
  const int i = flat_index();
  if (i >= p.count) return;
  const float kSqrt2OverPi = 0.7978845608028654, kCoef = 0.044715;
  const float x = p.g.v[i];
  p.h.v[i] = 0.5 * x * (1.0 + tanh(kSqrt2OverPi * x * (1.0 + kCoef * x * x))) * p.u.v[i];
}
