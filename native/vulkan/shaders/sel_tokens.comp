#version 450
// top_tokens, last step: head g's selected tokens (composite ≥ its cap-th largest) in ascending order to
// out[start[g] ..], one group of 256 per head over its n tokens in chunks of 256: each chunk's flags get
// an exclusive prefix sum in shared memory, added to the count of the chunks before.
#include "common.glsl"
#include "select.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push { Floats score; Segments seg; Ints out_; int Hk, n; } p;
shared uint sums[256];
void main() {
  const int g = int(gl_WorkGroupID.x), tid = int(gl_LocalInvocationID.x);
  if (g >= p.Hk || p.seg.s[g].remaining == 0u) return;
  const uint64_t threshold = p.seg.s[g].prefix;
  const int64_t start = p.seg.s[g].start;
  uint base = 0u;
  for (int j0 = 0; j0 < p.n; j0 += 256) {
    const int j = j0 + tid;
    const uint flag = j < p.n && composite(p.score.v[g * p.n + j], uint(j)) >= threshold ? 1u : 0u;
    sums[tid] = flag;
    barrier();
    for (int k = 1; k < 256; k <<= 1) {  // inclusive scan (Hillis-Steele)
      const uint add = tid >= k ? sums[tid - k] : 0u;
      barrier();
      sums[tid] += add;
      barrier();
    }
    if (flag != 0u) Ints(uint64_t(p.out_) + 4ul * uint64_t(start + int64_t(base + sums[tid] - 1u))).v[0] = j;
    base += sums[255];
    barrier();
  }
}
