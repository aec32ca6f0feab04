// The exact selections (topk_per_head, top_tokens) by radix select, shared by sel_*.comp. Needs common.glsl.
// Every element gets a 64-bit composite that orders it as the CPU's comparison does (kv/allocator.cc): the
// score's order-preserving bits (−0 as +0, since they compare equal) above the complement of its
// tie-break index (lower index wins). All composites differ, so the k best elements are exactly those
// whose composite is at least the k-th largest, which eight passes of 8-bit digit histograms find.
struct Segment {
  uint64_t prefix;   // the digits of the k-th largest composite settled so far (all of them at the end)
  uint remaining;    // its rank among the elements that match the prefix (1 = the largest); 0: select none
  uint pad;
  int64_t start;     // top_tokens: the segment's first output index
};
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Segments { Segment s[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Uints { uint v[]; };

uint64_t composite(float score, uint tie) {
  const uint u = floatBitsToUint(score == 0.0 ? 0.0 : score);
  const uint key = (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
  return (uint64_t(key) << 32) | uint64_t(0xffffffffu - tie);
}
