#version 450
// Radix select: settles the digit at `shift` of each segment from its histogram (the bin that holds the
// remaining-th largest, scanning from the top; the rank becomes relative to that bin), then clears the
// histogram for the next digit. One invocation per segment.
#include "common.glsl"
#include "select.glsl"
layout(local_size_x = 64) in;
layout(push_constant) uniform Push { Segments seg; Uints hist; int segments, shift; } p;
void main() {
  const int s = int(gl_GlobalInvocationID.x);
  if (s >= p.segments) return;
  uint remaining = p.seg.s[s].remaining;
  if (remaining != 0u) {
    uint cum = 0u;
    for (int b = 255; b >= 0; b--) {
      const uint c = p.hist.v[s * 256 + b];
      if (cum + c >= remaining) {
        p.seg.s[s].prefix |= uint64_t(b) << p.shift;
        p.seg.s[s].remaining = remaining - cum;
        break;
      }
      cum += c;
    }
  }
  for (int b = 0; b < 256; b++) p.hist.v[s * 256 + b] = 0u;
}
