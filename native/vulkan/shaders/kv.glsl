// The flat per-head KV cache's entries (kv/flat-cache.h, folio_gpu_kv_layer): keys of k_type and values of
// v_type, each F32, F16, Q8_0 or Q4_0 (kv/entry-format.h), an entry `bytes` long. Quantized entries are GGUF
// blocks of 32 (dequant.glsl's T_Q8_0, T_Q4_0 and block_bytes), the last one shorter where dim is no multiple
// of 32; they are packed without padding, so those are read and written a byte at a time.
// Needs common.glsl, dequant.glsl.

// Entry `entry` of a cache array of entries of `bytes`: its address.
uint64_t kv_row(uint64_t base, int64_t entry, int bytes) { return base + uint64_t(entry) * uint64_t(bytes); }

// Element d of the entry at `row` of `dim` numbers: F32 and F16 as they are; a quantized element from its
// block b = d / 32 (of min(32, dim − 32b) numbers): Q8_0 d·q, Q4_0 d·(q − 8), element j of a block of len
// the low nibble of byte j (j < len/2) or the high one of byte j − len/2. The product is the CPU's
// (kv/entry-format.cc, quant/quant-scalar.cc), rounded on its own.
float kv_load(uint64_t row, int type, int dim, int d) {
  if (type == T_F16) return unpackHalf2x16(uint(Halves(row).v[d])).x;
  if (type == T_F32) return Floats(row).v[d];
  const int b = d >> 5, j = d & 31;
  const uint64_t blk = row + uint64_t(b * block_bytes(type));
  const float scale = f16_at(blk, 0);
  int q;
  if (type == T_Q8_0) {
    q = int(int8_t(Bytes(blk).v[2 + j]));
  } else {
    const int half_ = min(32, dim - 32 * b) >> 1;
    q = j < half_ ? int(u8_at(blk, 2 + j) & 15u) - 8 : int(u8_at(blk, 2 + j - half_) >> 4) - 8;
  }
  precise float x = float(q) * scale;
  return x;
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
void kv_store(uint64_t row, int type, int d, float v) {
  if (type == T_F16) Halves(row).v[d] = uint16_t(float_to_half(v));
  else Floats(row).v[d] = v;
}

// a / b rounded to nearest even, for finite a and b ≠ 0, in integer operations: Vulkan lets a division be
// 2.5 ulp off, and a quantized block's d and 1/d must be the CPU's to store the same bytes. The significands
// (subnormals normalized) give a quotient of 40 or 41 bits, of which 24 are kept (fewer for a subnormal
// result), rounded by the rest and the remainder.
float div_rn(float a, float b) {
  const uint ua = floatBitsToUint(a), ub = floatBitsToUint(b), sign = (ua ^ ub) & 0x80000000u;
  int ea = int((ua >> 23) & 0xffu), eb = int((ub >> 23) & 0xffu);
  uint ma = ua & 0x7fffffu, mb = ub & 0x7fffffu;
  if (ea == 0 && ma == 0u) return uintBitsToFloat(sign);
  if (ea == 0) ea = 1; else ma |= 0x800000u;
  if (eb == 0) eb = 1; else mb |= 0x800000u;
  for (; ma < 0x800000u; ma <<= 1) ea--;  // value = m·2^(e − 150), m in [2^23, 2^24)
  for (; mb < 0x800000u; mb <<= 1) eb--;
  const uint64_t num = uint64_t(ma) << 40, q = num / uint64_t(mb);
  const bool sticky = num % uint64_t(mb) != 0ul;
  int shift = q >= (1ul << 40) ? 17 : 16;
  int biased = shift - 40 + ea - eb + 150;  // of the 24-bit q >> shift
  if (biased >= 255) return uintBitsToFloat(sign | 0x7f800000u);
  if (biased < 1) {  // subnormal: fewer bits
    shift += 1 - biased;
    biased = 0;
    if (shift > 42) return uintBitsToFloat(sign);  // below half the smallest subnormal
  }
  uint m = uint(q >> shift);
  const uint64_t rest = q & ((1ul << shift) - 1ul), halfway = 1ul << (shift - 1);
  if (rest > halfway || (rest == halfway && (sticky || (m & 1u) != 0u))) m++;
  return uintBitsToFloat(sign | ((uint(max(biased, 1) - 1) << 23) + m));  // a carry may reach the next binade
}

// Quantizes block b of an entry of `dim` numbers, x = src[base + 32b ..], into the entry at `row`, as the
// CPU does (kv/entry-format.cc's encode_block, quant/quant-scalar.cc): Q8_0 d = amax / 127, q = x·(1/d)
// rounded half away from 0; Q4_0 d = (the x of largest magnitude, the first of equals) / −8,
// q = min(15, int(x·(1/d) + 8.5)). d is stored as f16, the q use the float d.
void kv_store_block(uint64_t row, int type, int dim, int b, Floats src, int base) {
  const int len = min(32, dim - 32 * b), x0 = base + 32 * b;
  const uint64_t blk = row + uint64_t(b * block_bytes(type));
  float d;
  if (type == T_Q8_0) {
    float amax = 0.0;
    for (int i = 0; i < len; i++) {
      const float a = abs(src.v[x0 + i]);
      amax = amax < a ? a : amax;  // std::max
    }
    d = div_rn(amax, 127.0);
  } else {
    float amax = 0.0, mx = 0.0;
    for (int i = 0; i < len; i++) {
      const float x = src.v[x0 + i];
      if (abs(x) > amax) amax = abs(x), mx = x;
    }
    precise float m8 = mx * -0.125;  // = mx / −8, both exact roundings of the same number
    d = m8;
  }
  const float id = d != 0.0 ? div_rn(1.0, d) : 0.0;
  const uint dh = float_to_half(d);
  Bytes(blk).v[0] = uint8_t(dh & 255u);
  Bytes(blk).v[1] = uint8_t(dh >> 8);
  if (type == T_Q8_0) {
    for (int i = 0; i < len; i++) {
      precise float v = src.v[x0 + i] * id;
      const float t = trunc(v);  // v − t is exact: round half away from 0 as roundf
      const int q = int(t) + (abs(v - t) >= 0.5 ? (v < 0.0 ? -1 : 1) : 0);
      Bytes(blk).v[2 + i] = uint8_t(uint(q) & 255u);
    }
  } else {
    const int half_ = len >> 1;
    for (int j = 0; j < half_; j++) {
      precise float y0 = src.v[x0 + j] * id + 8.5, y1 = src.v[x0 + j + half_] * id + 8.5;
      const uint q0 = uint(min(15, int(y0))), q1 = uint(min(15, int(y1)));
      Bytes(blk).v[2 + j] = uint8_t(q0 | (q1 << 4));
    }
  }
}
