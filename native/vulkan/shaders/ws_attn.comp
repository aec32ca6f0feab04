#version 450
// Window scores, pass 2 of 3: attn[g, j] = the mean over the R = G·w rows of KV head g of their softmax
// probability of key j (0 where the row does not see it), one invocation per (g, j), j < L.
// stats: [Hk, R, 2] from ws_stats.comp; attn: [Hk, L].
#include "common.glsl"
#include "dequant.glsl"
#include "kv.glsl"
#include "window.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push {
  uint64_t kc;  // the cache's k [capacity] entries of kb bytes (D numbers of k_type)
  Int64s offset;
  Floats qw, stats, attn;
  int Hk, n_head, L, w, D, k_type, kb;
  float scale;
} p;
void main() {
  const int idx = flat_index();
  if (idx >= p.Hk * p.L) return;
  const int g = idx / p.L, j = idx % p.L, G = p.n_head / p.Hk, R = G * p.w;
  const uint64_t krow = kv_row(p.kc, p.offset.v[g] + j, p.kb);
  float acc = 0.0;
  for (int r = 0; r < R; r++) {
    const int h = g * G + r / p.w, i = r % p.w;
    if (j > p.L - p.w + i) continue;  // not visible to this row
    const float s = window_dot(p.qw, krow, p.k_type, (i * p.n_head + h) * p.D, p.D, p.scale);
    const int st = 2 * (g * R + r);
    acc += exp(s - p.stats.v[st]) * p.stats.v[st + 1];
  }
  p.attn.v[idx] = acc / float(R);
}
