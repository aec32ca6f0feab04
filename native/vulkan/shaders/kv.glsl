// The flat per-head KV cache's entries (kv/flat-cache.h): rows of F32 or F16 (kv_type 0 / 1). Needs common.glsl.

// Row `entry` of a cache array of rows of `dim` values: its address.
uint64_t kv_row(uint64_t base, int kv_type, int64_t entry, int dim) {
  return base + uint64_t(entry) * uint64_t(dim) * uint64_t(kv_type == 1 ? 2 : 4);
}
float kv_load(uint64_t row, int kv_type, int d) {
  return kv_type == 1 ? unpackHalf2x16(uint(Halves(row).v[d])).x : Floats(row).v[d];
}

// float → IEEE half, rounded to nearest even (the engine's conversion; overflow to infinity, NaN kept a
// NaN), in integer operations: a GPU's own conversion may round otherwise.
uint float_to_half(float f) {
  const uint x = floatBitsToUint(f), sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  const int exp = int((x >> 23) & 0xffu);
  if (exp == 255) return sign | 0x7c00u | (mant != 0u ? 0x200u : 0u);
  const int e = exp - 127 + 15;  // the half's biased exponent
  if (e >= 31) return sign | 0x7c00u;
  if (e <= 0) {  // a half subnormal (or zero): the 24-bit significand shifted right by 14 − e
    const int shift = 14 - e;
    if (shift >= 25) return sign;  // below half the smallest subnormal
    const uint m = mant | 0x800000u, h = m >> shift, rem = m & ((1u << shift) - 1u), half_ = 1u << (shift - 1);
    return sign | (h + ((rem > half_ || (rem == half_ && (h & 1u) != 0u)) ? 1u : 0u));
  }
  const uint h = (uint(e) << 10) | (mant >> 13), rem = mant & 0x1fffu;
  return sign | (h + ((rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) ? 1u : 0u));  // a carry may reach inf
}
void kv_store(uint64_t row, int kv_type, int d, float v) {
  if (kv_type == 1) Halves(row).v[d] = uint16_t(float_to_half(v));
  else Floats(row).v[d] = v;
}
