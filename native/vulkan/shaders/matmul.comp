#version 450
// y[t, r] = Σ_c W[r, c] · x[t, c] for many tokens (prefill): a group of 64 invocations computes a tile of
// 32 rows × 32 tokens, stepping through the columns 32 at a time; each step dequantizes the 32 × 32 weights
// once into shared memory (two groups of 8 per invocation) beside the 32 × 32 activations, and each
// invocation accumulates 4 rows × 4 tokens from them. W: rows × cols of `type`, ldw bytes per row;
// x: [n, cols]; y: [n, rows].
#include "common.glsl"
#include "dequant.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { uint64_t w; Floats x; Floats y; int64_t ldw; int rows, cols, n, type; } p;
shared float ws[32][33];  // [row of the tile, column of the step] (+1: no bank conflicts)
shared float xs[32][33];  // [token of the tile, column of the step]
void main() {
  const int r0 = 32 * int(gl_WorkGroupID.x), t0 = 32 * int(gl_WorkGroupID.y), tid = int(gl_LocalInvocationID.x);
  const int tx = tid % 8, ty = tid / 8;  // rows tx + 8i, tokens ty + 8j
  const int groups = (p.cols + 7) / 8;
  float acc[4][4];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) acc[i][j] = 0.0;
  for (int c0 = 0; c0 < p.cols; c0 += 32) {
    for (int u = tid; u < 128; u += 64) {  // 32 rows × 4 groups of 8
      const int rr = u / 4, g = c0 / 8 + u % 4;
      float v[8] = float[8](0, 0, 0, 0, 0, 0, 0, 0);
      if (r0 + rr < p.rows && g < groups) dequant8(p.w + uint64_t(r0 + rr) * uint64_t(p.ldw), p.type, g, p.cols, v);
      for (int k = 0; k < 8; k++) ws[rr][8 * (u % 4) + k] = v[k];
    }
    for (int u = tid; u < 1024; u += 64) {  // 32 tokens × 32 columns
      const int tt = u / 32, c = c0 + u % 32;
      xs[tt][u % 32] = t0 + tt < p.n && c < p.cols ? p.x.v[(t0 + tt) * p.cols + c] : 0.0;
    }
    barrier();
    for (int k = 0; k < 32; k++) {
      float wv[4], xv[4];
      for (int i = 0; i < 4; i++) wv[i] = ws[tx + 8 * i][k];
      for (int j = 0; j < 4; j++) xv[j] = xs[ty + 8 * j][k];
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] += wv[i] * xv[j];
    }
    barrier();
  }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      const int r = r0 + tx + 8 * i, t = t0 + ty + 8 * j;
      if (r < p.rows && t < p.n) p.y.v[t * p.rows + r] = acc[i][j];
    }
}
