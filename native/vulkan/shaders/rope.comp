#version 450
// Rotates x [n, n_heads, head_dim] in place, one group per token. The pair angles first (shared by every
// head of the token): base^(−2i/rope_dim) is built by i repeated float multiplications of pos by
// theta_scale (computed on the host with the CPU's expression), the CPU's exact sequence of roundings;
// then every (head, pair) rotates with separately rounded products (`precise`: no fused multiply-add,
// as the CPU build has none).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push {
  Floats x;
  Ints pos;
  Floats freq_factors;  // [rope_dim/2], or address 0 for none
  int n, n_heads, head_dim, rope_dim, neox;
  float theta_scale, freq_scale, mscale;
} p;
shared float cs[256];  // [pairs, 2] cos and sin of each pair's angle; rope_dim ≤ 256
void main() {
  const int t = flat_group();
  if (t >= p.n) return;
  const int pairs = p.rope_dim / 2, tid = int(gl_LocalInvocationID.x);
  const bool has_ff = uint64_t(p.freq_factors) != 0;
  for (int i = tid; i < pairs; i += 256) {
    precise float theta = float(p.pos.v[t]);
    for (int k = 0; k < i; k++) theta *= p.theta_scale;
    const float ff = has_ff ? p.freq_factors.v[i] : 1.0;
    precise float th = p.freq_scale * (theta / ff);
    // The CPU's rounding: cos·mscale, then the rotation (LongRoPE's attn_factor; else 1).
    precise float c = cos(th) * p.mscale, sn = sin(th) * p.mscale;
    cs[2 * i] = c;
    cs[2 * i + 1] = sn;
  }
  barrier();
  const int base = t * p.n_heads * p.head_dim;
  for (int idx = tid; idx < p.n_heads * pairs; idx += 256) {
    const int h = idx / pairs, i = idx % pairs;
    const int a = base + h * p.head_dim + (p.neox != 0 ? i : 2 * i);
    const int b = base + h * p.head_dim + (p.neox != 0 ? i + pairs : 2 * i + 1);
    const float c = cs[2 * i], sn = cs[2 * i + 1];
    const float x0 = p.x.v[a], x1 = p.x.v[b];
    precise float x0c = x0 * c, x1s = x1 * sn, x0s = x0 * sn, x1c = x1 * c;
    precise float ra = x0c - x1s, rb = x0s + x1c;
    p.x.v[a] = ra;
    p.x.v[b] = rb;
  }
}
