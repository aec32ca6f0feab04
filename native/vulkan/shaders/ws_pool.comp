#version 450
// Window scores, pass 3 of 3: score[g, j] = max of attn[g, t] over t in [j − kernel/2, j + kernel/2] ∩ [0, n),
// n = L − w (kv::max_pool), one invocation per (g, j).     attn: [Hk, L]; score: [Hk, n].
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { Floats attn, score; int Hk, L, n, kernel; } p;
void main() {
  const int idx = flat_index();
  if (idx >= p.Hk * p.n) return;
  const int g = idx / p.n, j = idx % p.n, r = p.kernel / 2;
  float m = -1.0 / 0.0;
  for (int t = max(0, j - r); t <= min(p.n - 1, j + r); t++) m = max(m, p.attn.v[g * p.L + t]);
  p.score.v[idx] = m;
}
