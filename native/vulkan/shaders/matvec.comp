#version 450
// y[t, r] = Σ_c W[r, c] · x[t, c] for a few tokens (decode): one group of 64 invocations per row r and
// tile of up to 8 tokens (gl_WorkGroupID.y); each invocation dequantizes groups of 8 weights (strided over
// the row) once and multiplies them with every token of the tile, then the group sums in shared memory.
// W: rows × cols of `type`, ldw bytes per row; x: [n, cols]; y: [n, rows].
#include "common.glsl"
#include "dequant.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { uint64_t w; Floats x; Floats y; int64_t ldw; int rows, cols, n, type; } p;
shared float part[8][64];  // [token of the tile, invocation]
void main() {
  const int r = int(gl_WorkGroupID.x + gl_WorkGroupID.z * 65535u), t0 = 8 * int(gl_WorkGroupID.y);
  const int tid = int(gl_LocalInvocationID.x), tn = min(8, p.n - t0);
  if (r >= p.rows) return;
  const uint64_t row = p.w + uint64_t(r) * uint64_t(p.ldw);
  float acc[8] = float[8](0, 0, 0, 0, 0, 0, 0, 0);
  const int groups = (p.cols + 7) / 8;
  for (int g = tid; g < groups; g += 64) {
    float v[8];
    dequant8(row, p.type, g, p.cols, v);
    const int c0 = 8 * g, cn = min(8, p.cols - c0);
    for (int t = 0; t < tn; t++) {
      const int xb = (t0 + t) * p.cols + c0;
      float s = 0.0;
      for (int k = 0; k < cn; k++) s += v[k] * p.x.v[xb + k];
      acc[t] += s;
    }
  }
  for (int t = 0; t < 8; t++) part[t][tid] = acc[t];
  barrier();
  for (int s = 32; s > 0; s >>= 1) {
    if (tid < s)
      for (int t = 0; t < 8; t++) part[t][tid] += part[t][tid + s];
    barrier();
  }
  if (tid < tn) p.y.v[(t0 + tid) * p.rows + r] = part[tid][0];
}
