#version 450
// x [rows, block] ← each row times the normalised Walsh–Hadamard matrix of order block (a power of two,
// 2..1024), in place, as kv/hadamard.cc's butterfly: passes h = 1, 2, .. block/2 of (a + c, a − c) over the
// pairs (i, i + h) within blocks of 2h, then each number times norm = 1/√block (computed on the host, so
// that it is the CPU's: every step is one rounded operation and the results are equal).
// One group per tile of 1024 numbers (1024 / block whole rows; the last tile may be shorter), staged in
// shared memory: a pass of width h never crosses a row, so the tile is transformed as one array.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(push_constant) uniform Push {
  uint64_t x;     // [rows, block] floats
  int64_t total;  // rows·block
  int block;
  float norm;  // 1/√block
} p;
shared float s[1024];
void main() {
  const int64_t first = int64_t(flat_group()) * 1024l;
  if (first >= p.total) return;
  const int count = int(min(p.total - first, 1024l)), tid = int(gl_LocalInvocationID.x);
  Floats x = Floats(p.x + uint64_t(first) * 4ul);  // [count] this tile
  for (int i = tid; i < count; i += 256) s[i] = x.v[i];
  barrier();
  for (int h = 1; h < p.block; h <<= 1) {
    for (int k = tid; 2 * k < count; k += 256) {  // pair k: (i, i + h), i = its block of 2h's start + k mod h
      const int i = (k / h) * 2 * h + k % h;
      const float a = s[i], c = s[i + h];
      s[i] = a + c;
      s[i + h] = a - c;
    }
    barrier();
  }
  for (int i = tid; i < count; i += 256) {
    precise float y = s[i] * p.norm;
    x.v[i] = y;
  }
}
