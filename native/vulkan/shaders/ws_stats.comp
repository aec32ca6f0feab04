#version 450
// Window scores, pass 1 of 3: per row r of KV head g (see window.glsl) the max of its visible scores and
// 1/Σ exp(score − max), one group of 64 per (g, r): each invocation keeps a running max and sum over its
// strided keys (rescaling the sum when the max grows), then the group merges them.
// stats: [Hk, R, 2] = (max, 1/sum).
#include "common.glsl"
#include "dequant.glsl"
#include "kv.glsl"
#include "window.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push {
  uint64_t kc;    // the cache's k [capacity] entries of kb bytes (D numbers of k_type)
  Int64s offset;  // [Hk]
  Floats qw, stats;
  int Hk, n_head, L, w, D, k_type, kb;
  float scale;
} p;
shared float smax[64], ssum[64];
void main() {
  const int item = flat_group(), R = (p.n_head / p.Hk) * p.w;
  if (item >= p.Hk * R) return;
  const int g = item / R, r = item % R, tid = int(gl_LocalInvocationID.x);
  const int h = g * (p.n_head / p.Hk) + r / p.w, i = r % p.w, visible = p.L - p.w + i + 1;
  const int qbase = (i * p.n_head + h) * p.D;
  const int64_t off = p.offset.v[g];
  float mx = -1.0 / 0.0, sum = 0.0;
  for (int j = tid; j < visible; j += 64) {
    const float s = window_dot(p.qw, kv_row(p.kc, off + j, p.kb), p.k_type, qbase, p.D, p.scale);
    if (s > mx) {
      sum = sum * exp(mx - s) + 1.0;  // exp(−inf) = 0 for the first key
      mx = s;
    } else {
      sum += exp(s - mx);
    }
  }
  smax[tid] = mx;
  barrier();
  for (int k = 32; k > 0; k >>= 1) {
    if (tid < k) smax[tid] = max(smax[tid], smax[tid + k]);
    barrier();
  }
  const float M = smax[0];
  ssum[tid] = mx == -1.0 / 0.0 ? 0.0 : sum * exp(mx - M);
  barrier();
  for (int k = 32; k > 0; k >>= 1) {
    if (tid < k) ssum[tid] += ssum[tid + k];
    barrier();
  }
  if (tid == 0) {
    p.stats.v[2 * item] = M;
    p.stats.v[2 * item + 1] = 1.0 / ssum[0];
  }
}
