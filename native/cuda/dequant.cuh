// Device dequantization of the GGUF weight types, eight consecutive elements at a time: the unit that
// the matrix kernels (matmul.cu) hand to one thread. Every quantized type's block is 32 or 256 elements,
// so eight never straddle a block, a Q4_K/Q5_K sub-block of 32 or a Q6_K group of 16.
//
// Each type is a struct with
//   kBlock   elements per block (F32/F16/BF16: 8, a "block" of eight plain values)
//   kBytes   bytes per block
//   kAlign   the alignment its loads need of the weights' start and of their row stride (bytes): 8 where
//            the block size allows 8-byte loads (Q4_K, Q5_K; F32, F16, BF16 in their 8-byte variants),
//            else 2 (the fp16 words; every block size is even) or the element size. GGUF aligns tensor
//            data to at least 8.
//   kTail    rows may end inside a group of 8 (the plain types, whose rows have any length); then
//            dequant_part(blk, count, out) gives the count < 8 values left and zeros after them
//   dequant8(blk, q, out)   out[0, 8) = elements 8q .. 8q + 7 of the block at blk, 0 ≤ q < kBlock / 8
// The values are bit for bit those of the scalar reference (quant/quant-scalar.cc, dequantize_row_*):
// the same operations in the same order, and products that are added are rounded separately (mul_rn),
// never contracted into an FMA, as the reference (built without FMA) rounds them.
//
// Everything is __host__ __device__ so that a CPU program can check it against the reference. Loads are
// as wide as the alignment allows (few load instructions matter to the matrix-vector kernel, which
// would otherwise be bound by them rather than by memory bandwidth); bytes are taken out of little-endian
// words, as GGUF stores them.
#pragma once
#include <cuda_fp16.h>

#include <cassert>
#include <cstdint>
#include <cstring>

namespace folio::cuda::dq {

#define FOLIO_HD __host__ __device__ __forceinline__
// "#pragma unroll" in __host__ __device__ code, silent in the host compiler's pass (-Wunknown-pragmas).
#ifndef FOLIO_UNROLL
#ifdef __CUDA_ARCH__
#define FOLIO_UNROLL _Pragma("unroll")
#else
#define FOLIO_UNROLL  // the host copies are only for tests
#endif
#endif

// An aligned load of a T (2, 4 or 8 bytes) at p, a multiple of sizeof(T).
template <typename T>
FOLIO_HD T ld(const uint8_t* p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const T*>(p);
#else
  assert(reinterpret_cast<uintptr_t>(p) % sizeof(T) == 0);  // what the device load would require
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
#endif
}
FOLIO_HD uint32_t ld16(const uint8_t* p) { return ld<uint16_t>(p); }
FOLIO_HD uint32_t ld32(const uint8_t* p) { return ld<uint32_t>(p); }
FOLIO_HD uint2 ld64(const uint8_t* p) { return ld<uint2>(p); }

// Eight bytes p[0, 8) as two little-endian words {bytes 0-3, bytes 4-7}, p 2-byte aligned.
FOLIO_HD uint2 ld64_a2(const uint8_t* p) {
  return make_uint2(ld16(p) | ld16(p + 2) << 16, ld16(p + 4) | ld16(p + 6) << 16);
}
// Byte i (0..7, a constant after unrolling) of such a pair.
FOLIO_HD uint32_t byte_of(uint2 v, int i) { return ((i < 4 ? v.x : v.y) >> (8 * (i & 3))) & 255; }

FOLIO_HD float bits_to_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// IEEE binary16 → float32 (exact; the hardware conversion on the device).
FOLIO_HD float half_to_float(uint32_t h) {
  __half_raw r;
  r.x = uint16_t(h);
  return __half2float(__half(r));
}

// a·b rounded on its own, so that a following addition is not fused with it (the reference's rounding).
FOLIO_HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// F32, F16, BF16: "blocks" of 8 plain values. Their rows may have any length (kTail): the last group
// of a row can be partial, dequant_part reads only its first `count` values. A: the alignment of the rows
// (w and ldw), 8 for 8-byte loads, else the element size (one load per value).
template <int A>
struct F32 {
  static_assert(A == 8 || A == 4, "alignment");
  static constexpr int kBlock = 8, kBytes = 32, kAlign = A;
  static constexpr bool kTail = true;
  FOLIO_HD static void dequant8(const uint8_t* blk, int, float out[8]) {
    if constexpr (A == 8) {
      FOLIO_UNROLL
      for (int i = 0; i < 4; ++i) {
        const uint2 v = ld64(blk + 8 * i);
        out[2 * i] = bits_to_float(v.x);
        out[2 * i + 1] = bits_to_float(v.y);
      }
    } else {
      FOLIO_UNROLL
      for (int i = 0; i < 8; ++i) out[i] = bits_to_float(ld32(blk + 4 * i));
    }
  }
  // out[0, count) = the first count (< 8) values at blk, zeros after.
  FOLIO_HD static void dequant_part(const uint8_t* blk, int count, float out[8]) {
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = i < count ? bits_to_float(ld32(blk + 4 * i)) : 0.0f;
  }
};

// The 16-bit float types, one value per 2 bytes; Conv turns the 16 bits (in the low half) into a float.
struct HalfBits {
  FOLIO_HD static float to_float(uint32_t h) { return half_to_float(h); }
};
// bfloat16 → float32: the upper 16 bits of a float32.
struct BFloat16Bits {
  FOLIO_HD static float to_float(uint32_t h) { return bits_to_float(h << 16); }
};

template <int A, typename Conv>
struct Float16s {
  static_assert(A == 8 || A == 2, "alignment");
  static constexpr int kBlock = 8, kBytes = 16, kAlign = A;
  static constexpr bool kTail = true;
  FOLIO_HD static void dequant8(const uint8_t* blk, int, float out[8]) {
    if constexpr (A == 8) {
      FOLIO_UNROLL
      for (int i = 0; i < 2; ++i) {
        const uint2 v = ld64(blk + 8 * i);
        out[4 * i] = Conv::to_float(v.x & 0xffff);
        out[4 * i + 1] = Conv::to_float(v.x >> 16);
        out[4 * i + 2] = Conv::to_float(v.y & 0xffff);
        out[4 * i + 3] = Conv::to_float(v.y >> 16);
      }
    } else {
      FOLIO_UNROLL
      for (int i = 0; i < 8; ++i) out[i] = Conv::to_float(ld16(blk + 2 * i));
    }
  }
  FOLIO_HD static void dequant_part(const uint8_t* blk, int count, float out[8]) {
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = i < count ? Conv::to_float(ld16(blk + 2 * i)) : 0.0f;
  }
};
template <int A>
using F16 = Float16s<A, HalfBits>;
template <int A>
using BF16 = Float16s<A, BFloat16Bits>;

// The quantized types: rows are whole blocks (kTail false), so groups of 8 are never partial.

// Q8_0 { fp16 d; int8 qs[32] }: x = qs[i] · d.
struct Q8_0 {
  static constexpr int kBlock = 32, kBytes = 34, kAlign = 2;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const float d = half_to_float(ld16(blk));
    const uint2 qs = ld64_a2(blk + 2 + 8 * q);  // qs[8q .. 8q + 8)
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = float(int8_t(byte_of(qs, i))) * d;
  }
};

// Q4_0 { fp16 d; u8 qs[16] }: element j < 16 is the low nibble of qs[j], j ≥ 16 the high nibble of
// qs[j − 16]; x = (nibble − 8) · d. Groups 0, 1 are low nibbles, 2, 3 high ones.
struct Q4_0 {
  static constexpr int kBlock = 32, kBytes = 18, kAlign = 2;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const float d = half_to_float(ld16(blk));
    const uint2 qs = ld64_a2(blk + 2 + 8 * (q & 1));
    const int shift = 4 * (q >> 1);
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = float(int((byte_of(qs, i) >> shift) & 15) - 8) * d;
  }
};

// Q4_1 { fp16 d, m; u8 qs[16] }: nibbles as Q4_0, x = nibble · d + m.
struct Q4_1 {
  static constexpr int kBlock = 32, kBytes = 20, kAlign = 2;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const float d = half_to_float(ld16(blk)), m = half_to_float(ld16(blk + 2));
    const uint2 qs = ld64_a2(blk + 4 + 8 * (q & 1));
    const int shift = 4 * (q >> 1);
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = mul_rn(float((byte_of(qs, i) >> shift) & 15), d) + m;
  }
};

// The 5-bit values of elements 8q .. 8q + 7 of a Q5 block: nibble as Q4_0, bit 4 of element e is bit e
// of the little-endian u32 qh.
FOLIO_HD void q5_values(const uint8_t* qh_bytes, const uint8_t* qs_block, int q, int v[8]) {
  const uint32_t qh = (ld16(qh_bytes) | ld16(qh_bytes + 2) << 16) >> (8 * q);  // bit i: element 8q + i
  const uint2 qs = ld64_a2(qs_block + 8 * (q & 1));
  const int shift = 4 * (q >> 1);
  FOLIO_UNROLL
  for (int i = 0; i < 8; ++i) v[i] = int((byte_of(qs, i) >> shift) & 15) | int((qh >> i) & 1) << 4;
}

// Q5_0 { fp16 d; u8 qh[4]; u8 qs[16] }: x = (q − 16) · d.
struct Q5_0 {
  static constexpr int kBlock = 32, kBytes = 22, kAlign = 2;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const float d = half_to_float(ld16(blk));
    int v[8];
    q5_values(blk + 2, blk + 6, q, v);
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = float(v[i] - 16) * d;
  }
};

// Q5_1 { fp16 d, m; u8 qh[4]; u8 qs[16] }: x = q · d + m.
struct Q5_1 {
  static constexpr int kBlock = 32, kBytes = 24, kAlign = 2;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const float d = half_to_float(ld16(blk)), m = half_to_float(ld16(blk + 2));
    int v[8];
    q5_values(blk + 4, blk + 8, q, v);
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = mul_rn(float(v[i]), d) + m;
  }
};

// Scale and min of sub-block j (0..7) of a Q4_K/Q5_K block from its 12 scale bytes s (blocks.h,
// unpack_scales_k4, on whole words): scale/min j < 4 are the low 6 bits of s[j] / s[j + 4]; j ≥ 4 take
// their low 4 bits from the nibbles of s[j + 4] and bits 4-5 from the top bits of s[j − 4] / s[j].
// s is 4-byte aligned.
FOLIO_HD void k4_scale_min(const uint8_t* s, int j, float* sc, float* mn) {
  const uint32_t a = ld32(s), b = ld32(s + 4), c = ld32(s + 8);
  const uint32_t scales = j < 4 ? a & 0x3f3f3f3fu : (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
  const uint32_t mins = j < 4 ? b & 0x3f3f3f3fu : ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
  *sc = float((scales >> (8 * (j & 3))) & 255);
  *mn = float((mins >> (8 * (j & 3))) & 255);
}

// Q4_K { fp16 d, dmin; u8 scales[12]; u8 qs[128] }: sub-block j (32 elements) sits in chunk c = j / 2 of
// qs, low nibbles for even j, high for odd; x = (d·sc[j])·q − (dmin·m[j]).
struct Q4_K {
  static constexpr int kBlock = 256, kBytes = 144, kAlign = 8;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const int j = q >> 2, l0 = 8 * (q & 3);  // sub-block, first element within it
    const uint32_t dd = ld32(blk);           // d, dmin
    float sc, mn;
    k4_scale_min(blk + 4, j, &sc, &mn);
    const float dj = mul_rn(half_to_float(dd & 0xffff), sc), mj = mul_rn(half_to_float(dd >> 16), mn);
    const uint2 qs = ld64(blk + 16 + 32 * (j >> 1) + l0);
    const int shift = 4 * (j & 1);
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = mul_rn(dj, float((byte_of(qs, i) >> shift) & 15)) - mj;
  }
};

// Q5_K { fp16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] }: as Q4_K, the fifth bit of element l of
// sub-block j is bit j of qh[l].
struct Q5_K {
  static constexpr int kBlock = 256, kBytes = 176, kAlign = 8;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const int j = q >> 2, l0 = 8 * (q & 3);
    const uint32_t dd = ld32(blk);
    float sc, mn;
    k4_scale_min(blk + 4, j, &sc, &mn);
    const float dj = mul_rn(half_to_float(dd & 0xffff), sc), mj = mul_rn(half_to_float(dd >> 16), mn);
    const uint2 qh = ld64(blk + 16 + l0);
    const uint2 qs = ld64(blk + 48 + 32 * (j >> 1) + l0);
    const int shift = 4 * (j & 1);
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) {
      const int v = int((byte_of(qs, i) >> shift) & 15) | int((byte_of(qh, i) >> j) & 1) << 4;
      out[i] = mul_rn(dj, float(v)) - mj;
    }
  }
};

// Q6_K { u8 ql[128]; u8 qh[64]; int8 scales[16]; fp16 d }: element 128h + 32k + l (half h, quarter
// k < 4, l < 32) has low bits ql[64h + 32(k & 1) + l] >> 4(k >> 1) and high bits qh[32h + l] >> 2k;
// x = (d·sc[g])·(q − 32) with g = element / 16.
struct Q6_K {
  static constexpr int kBlock = 256, kBytes = 210, kAlign = 2;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const int h = q >> 4, r = 8 * (q & 15);  // half, first element within it
    const int k = r >> 5, l0 = r & 31;       // quarter, first element within it
    const float dg = mul_rn(half_to_float(ld16(blk + 208)), float(int8_t(blk[192 + (q >> 1)])));
    const uint2 ql = ld64_a2(blk + 64 * h + 32 * (k & 1) + l0);
    const uint2 qh = ld64_a2(blk + 128 + 32 * h + l0);
    const int lshift = 4 * (k >> 1), hshift = 2 * k;
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) {
      const int v = int((byte_of(ql, i) >> lshift) & 15) | int((byte_of(qh, i) >> hshift) & 3) << 4;
      out[i] = dg * float(v - 32);
    }
  }
};

// Q2_K { u8 scales[16]; u8 qs[64]; fp16 d, dmin } (blocks.h): element 128h + 32j + l is bits 2j, 2j+1 of
// qs[32h + l]; group g = element / 16 has scale byte g (low nibble scale, high nibble min);
// x = (d·sc)·q − (dmin·m). 84 bytes: 4-byte aligned blocks.
struct Q2_K {
  static constexpr int kBlock = 256, kBytes = 84, kAlign = 4;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const int e0 = 8 * q, h = e0 >> 7, j = (e0 >> 5) & 3, l0 = e0 & 31;
    const uint32_t dd = ld32(blk + 80);  // d, dmin
    const uint32_t sc = blk[q >> 1];
    const float dg = mul_rn(half_to_float(dd & 0xffff), float(sc & 15));
    const float mg = mul_rn(half_to_float(dd >> 16), float(sc >> 4));
    const uint8_t* p = blk + 16 + 32 * h + l0;
    const uint2 qs = make_uint2(ld32(p), ld32(p + 4));
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = mul_rn(dg, float((byte_of(qs, i) >> (2 * j)) & 3)) - mg;
  }
};

// Q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; fp16 d } (blocks.h): the low bits as Q2_K's, the high
// bit of element 128h + 32j + l is bit 4h + j of hmask[l], q = low + 4·high − 4; group g's 6-bit scale
// has its low 4 bits in nibble g / 8 of scales[g % 8] and its high 2 bits at bit 2(g / 4) of
// scales[8 + g % 4]; x = (d·(sc − 32))·q. 110 bytes: 2-byte aligned blocks.
struct Q3_K {
  static constexpr int kBlock = 256, kBytes = 110, kAlign = 2;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const int e0 = 8 * q, h = e0 >> 7, j = (e0 >> 5) & 3, l0 = e0 & 31, g = q >> 1;
    const int lo4 = g < 8 ? blk[96 + g] & 15 : blk[96 + g - 8] >> 4;
    const int hi2 = (blk[104 + (g & 3)] >> (2 * (g >> 2))) & 3;
    const float dg = mul_rn(half_to_float(ld16(blk + 108)), float((lo4 | hi2 << 4) - 32));
    const uint2 qs = ld64_a2(blk + 32 + 32 * h + l0);
    const uint2 hm = ld64_a2(blk + l0);
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) {
      const int v = int((byte_of(qs, i) >> (2 * j)) & 3) + 4 * int((byte_of(hm, i) >> (4 * h + j)) & 1) - 4;
      out[i] = mul_rn(dg, float(v));
    }
  }
};

// The IQ4 code book (blocks.h, kIq4nlValues: ggml's kvalues_iq4nl) as bytes of two 64-bit words, so that
// device code looks values up without a table in memory.
constexpr int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr uint64_t iq4nl_word(int half) {
  uint64_t w = 0;
  for (int k = 0; k < 8; ++k) w |= uint64_t(uint8_t(kIq4nl[8 * half + k])) << (8 * k);
  return w;
}
constexpr uint64_t kIq4nlLo = iq4nl_word(0), kIq4nlHi = iq4nl_word(1);
FOLIO_HD float iq4nl_value(uint32_t idx) {
  const uint64_t w = idx < 8 ? kIq4nlLo : kIq4nlHi;
  return float(int8_t(uint8_t(w >> (8 * (idx & 7)))));
}

// IQ4_NL { fp16 d; u8 qs[16] }: code book indices packed as Q4_0's nibbles; x = d·value.
struct IQ4_NL {
  static constexpr int kBlock = 32, kBytes = 18, kAlign = 2;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const float d = half_to_float(ld16(blk));
    const uint2 qs = ld64_a2(blk + 2 + 8 * (q & 1));
    const int shift = 4 * (q >> 1);
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = mul_rn(d, iq4nl_value((byte_of(qs, i) >> shift) & 15));
  }
};

// IQ4_XS { fp16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128] }: sub-block j (32 elements) has the 6-bit
// scale ls = nibble j % 2 of scales_l[j / 2] | bits 2j, 2j+1 of scales_h << 4 and its indices in
// qs[16j .. 16j + 16) as IQ4_NL's; x = (d·(ls − 32))·value. 136 bytes: 8-byte aligned blocks.
struct IQ4_XS {
  static constexpr int kBlock = 256, kBytes = 136, kAlign = 8;
  static constexpr bool kTail = false;
  FOLIO_HD static void dequant8(const uint8_t* blk, int q, float out[8]) {
    const int j = q >> 2, r = q & 3;
    const uint2 head = ld64(blk);  // d, scales_h, scales_l[4]
    const int ls = int((head.y >> (4 * j)) & 15) | int((head.x >> (16 + 2 * j)) & 3) << 4;
    const float dl = mul_rn(half_to_float(head.x & 0xffff), float(ls - 32));
    const uint2 qs = ld64(blk + 8 + 16 * j + 8 * (r & 1));
    const int shift = 4 * (r >> 1);
    FOLIO_UNROLL
    for (int i = 0; i < 8; ++i) out[i] = mul_rn(dl, iq4nl_value((byte_of(qs, i) >> shift) & 15));
  }
};

// Elements 8g .. 8g + 7 of the row at `row` of cols elements; past cols (a plain type's partial last
// group) zeros, and nothing is read there.
template <class T>
FOLIO_HD void dequant_group(const uint8_t* row, int64_t g, int64_t cols, float out[8]) {
  constexpr int kGroups = T::kBlock / 8;
  if constexpr (T::kTail) {
    if (8 * g + 8 > cols) {
      T::dequant_part(row + size_t(g) * T::kBytes, int(cols - 8 * g), out);
      return;
    }
  }
  T::dequant8(row + size_t(g / kGroups) * T::kBytes, int(g % kGroups), out);
}

#undef FOLIO_HD

}  // namespace folio::cuda::dq
