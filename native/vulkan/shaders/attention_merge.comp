#version 450
// Attention part 2 of 2: merges the S slices of each (query, head) that attention.comp wrote. With the
// slices' maxes m_s, sums l_s and outputs o_s and M = max_s m_s: out = Σ_s e^(m_s − M)·o_s / Σ_s e^(m_s − M)·l_s
// (an empty slice has m_s = −inf and weighs 0). One group of 64 per (query, head), output dims strided.
// part: [m·n_head, S, 2 + Dv]; out: [m, n_head·Dv].
#include "common.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { Floats part, out_; int items, Dv, S; } p;
void main() {
  const int item = flat_group();
  if (item >= p.items) return;
  const int tid = int(gl_LocalInvocationID.x), row = 2 + p.Dv, base = item * p.S * row;
  float M = -1.0 / 0.0;
  for (int s = 0; s < p.S; s++) M = max(M, p.part.v[base + s * row]);
  float sum = 0.0;
  for (int s = 0; s < p.S; s++) {
    const float ms = p.part.v[base + s * row];
    if (ms != -1.0 / 0.0) sum += exp(ms - M) * p.part.v[base + s * row + 1];
  }
  for (int d = tid; d < p.Dv; d += 64) {
    float o = 0.0;
    for (int s = 0; s < p.S; s++) {
      const float ms = p.part.v[base + s * row];
      if (ms != -1.0 / 0.0) o += exp(ms - M) * p.part.v[base + s * row + 2 + d];
    }
    p.out_.v[item * p.Dv + d] = sum > 0.0 ? o / sum : 0.0;
  }
}
