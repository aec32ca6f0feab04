#version 450
// len[g] += n for g < Hk (after kv_append.comp has written the entries, so a decode step uploads no lengths).
#include "common.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { Ints len; int Hk, n; } p;
void main() {
  const int g = int(gl_GlobalInvocationID.x);
  if (g < p.Hk) p.len.v[g] += p.n;
}
