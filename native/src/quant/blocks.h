// Block layouts of the quantized tensor types, bit for bit as ggml defines them (ggml-common.h: the
// block_* structs; ggml-quants.c: their reference (de)quantization). Every struct is plain bytes and
// 2-byte fp16 words, so a row of blocks can be read in place from a GGUF memory map. Only the internal
// kernel files include this header.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/fp16.h"

namespace folio::quant {

constexpr int QK = 32;     // elements per block of the simple formats (Q4_0 ... Q8_1)
constexpr int QK_K = 256;  // elements per super-block of the K-quants

// Q4_0, 18 bytes, 32 elements: x[i] = d * (q[i] - 8), q in 0..15.
//   d       fp16
//   qs[16]  byte j: low nibble = q[j], high nibble = q[j + 16]
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[QK / 2];
};

// Q4_1, 20 bytes, 32 elements: x[i] = d * q[i] + m, q in 0..15.
//   d, m    fp16, fp16
//   qs[16]  as Q4_0
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[QK / 2];
};

// Q5_0, 22 bytes, 32 elements: x[i] = d * (q[i] - 16), q in 0..31.
//   d       fp16
//   qh[4]   little-endian u32, bit i = bit 4 of q[i]
//   qs[16]  low 4 bits, nibbles as Q4_0
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[QK / 2];
};

// Q5_1, 24 bytes, 32 elements: x[i] = d * q[i] + m, q in 0..31.
//   d, m    fp16, fp16
//   qh[4], qs[16] as Q5_0
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[QK / 2];
};

// Q8_0, 34 bytes, 32 elements: x[i] = d * q[i], q int8 (the quantizer produces -127..127).
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[QK];
};

// Q8_1 (activations only), 36 bytes, 32 elements: x[i] = d * q[i]; s = d * Σ q[i] (fp16), which the
// Q4_1/Q5_1 dot products use for the offset term.
struct BlockQ8_1 {
  uint16_t d, s;
  int8_t qs[QK];
};

// Q4_K, 144 bytes, 256 elements in 8 sub-blocks of 32:
//   x = d * sc[j] * q - dmin * m[j], q in 0..15, sc and m 6-bit (see unpack_scales_k4).
//   d, dmin     fp16, fp16
//   scales[12]  8 scales + 8 mins, 6 bits each
//   qs[128]     4 chunks of 32 bytes; chunk c holds sub-block 2c in the low nibbles and sub-block
//               2c+1 in the high nibbles (element 64c + l is qs[32c + l] & 15, 64c + 32 + l is >> 4)
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[QK_K / 2];
};

// Q5_K, 176 bytes, 256 elements: as Q4_K with q in 0..31, the fifth bit in qh:
//   d, dmin, scales[12]  as Q4_K
//   qh[32]      bit 2c of qh[l] is the high bit of element 64c + l, bit 2c+1 that of 64c + 32 + l
//   qs[128]     low 4 bits, as Q4_K
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[QK_K / 8];
  uint8_t qs[QK_K / 2];
};

// Q6_K, 210 bytes, 256 elements in 16 groups of 16: x = d * sc[g] * (q - 32), q in 0..63, sc int8.
//   ql[128]     low 4 bits; two halves of 64 bytes, each covering 128 elements. In half h, element
//               128h + l (l < 32) is ql[64h + l] & 15, +32 is ql[64h + 32 + l] & 15, +64 is
//               ql[64h + l] >> 4, +96 is ql[64h + 32 + l] >> 4
//   qh[64]      high 2 bits; qh[32h + l] holds those of elements 128h + l, +32, +64, +96 in bits
//               0-1, 2-3, 4-5, 6-7
//   scales[16]  int8, one per group of 16 elements
//   d           fp16 (at the end)
struct BlockQ6_K {
  uint8_t ql[QK_K / 2];
  uint8_t qh[QK_K / 4];
  int8_t scales[QK_K / 16];
  uint16_t d;
};

// Q8_K (activations only), 292 bytes, 256 elements: x = d * q, d float32, q int8 (-127..127 from the
// quantizer); bsums[g] = Σ q over the 16 elements of group g (the K-quant dots use them for the
// min/offset terms).
struct BlockQ8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};

// Q2_K, 84 bytes, 256 elements in 16 groups of 16 (ggml-common.h, block_q2_K):
//   x = d * sc[g] * q - dmin * m[g], q in 0..3, sc and m 4-bit.
//   scales[16]  byte g: low nibble sc[g], high nibble m[g]
//   qs[64]      two halves of 32 bytes, each covering 128 elements: element 128h + 32j + l (l < 32) is
//               bits 2j, 2j+1 of qs[32h + l]
//   d, dmin     fp16, fp16 (at the end)
struct BlockQ2_K {
  uint8_t scales[QK_K / 16];
  uint8_t qs[QK_K / 4];
  uint16_t d, dmin;
};

// Q3_K, 110 bytes, 256 elements in 16 groups of 16 (ggml-common.h, block_q3_K):
//   x = d * (sc[g] - 32) * q, q in -4..3, sc 6-bit (see q3_k_scale).
//   hmask[32]   bit 4h + j of hmask[l] is the high bit of element 128h + 32j + l; q = low bits + 4 * high
//               bit - 4 (a clear bit subtracts 4)
//   qs[64]      low 2 bits, laid out as Q2_K's qs
//   scales[12]  16 six-bit scales: the low 4 bits of scale i are the low (i < 8) or high (i >= 8) nibble
//               of byte i % 8; its high 2 bits are bits 2(i / 4), 2(i / 4)+1 of byte 8 + i % 4
//   d           fp16
struct BlockQ3_K {
  uint8_t hmask[QK_K / 8];
  uint8_t qs[QK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};

inline int q3_k_scale(const uint8_t s[12], int i) {
  const int lo = i < 8 ? s[i] & 15 : s[i - 8] >> 4;
  const int hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
  return lo | hi << 4;
}

// The non-linear 4-bit code book of IQ4_NL and IQ4_XS (ggml-quants.c / ggml-common.h, kvalues_iq4nl):
// index q in 0..15 stands for the value kIq4nlValues[q] (times the block's scale).
constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// IQ4_NL, 18 bytes, 32 elements (ggml-common.h, block_iq4_nl): x[i] = d * kIq4nlValues[q[i]].
//   d       fp16
//   qs[16]  nibbles as Q4_0 (element j low nibble of qs[j], element j + 16 its high nibble)
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[QK / 2];
};

// IQ4_XS, 136 bytes, 256 elements in 8 sub-blocks of 32 (ggml-common.h, block_iq4_xs):
//   x = d * (ls[j] - 32) * kIq4nlValues[q], ls 6-bit (see iq4_xs_scale).
//   d            fp16
//   scales_h     u16, bits 2j, 2j+1: the high 2 bits of ls[j]
//   scales_l[4]  byte j / 2, nibble j % 2 (low first): the low 4 bits of ls[j]
//   qs[128]      16 bytes per sub-block, nibbles as IQ4_NL
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[QK_K / 64];
  uint8_t qs[QK_K / 2];
};

inline int iq4_xs_scale(const BlockIQ4_XS& b, int j) {
  return ((b.scales_l[j / 2] >> (4 * (j % 2))) & 15) | ((b.scales_h >> (2 * j)) & 3) << 4;
}

// Q4_K_R8 (Folio's own, made at load time: quant/repack.h), 1152 bytes: super-block b of 8 consecutive
// rows of a Q4_K matrix, laid out so that a 32-byte vector holds 4 elements of each of the 8 rows and a
// matrix-vector kernel computes the 8 rows in the 32-bit lanes of one register (no horizontal sums, one
// scale multiply per sub-block for all 8 rows). Exactly Q4_K's values, in the same 144 bytes per row and
// super-block:
//   d[8], dmin[8]    fp16, row r's d and dmin
//   sm_lo[64]        the low 4 bits of the 6-bit scales (low nibbles) and mins (high nibbles): byte i
//                    holds scale i and min i, where scale i is that of sub-block i / 8 of row i % 8 and
//                    min i that of sub-block 2(i / 16) + i % 2 of row (i % 16) / 2 (the orders in which
//                    the kernels use them; k4r8_scale / k4r8_min below)
//   sm_hi[32]        their high 2 bits: byte i holds scale i in bits 0-1, scale 32 + i in bits 2-3, min
//                    i in bits 4-5, min 32 + i in bits 6-7 (one vector shift and mask each)
//   qs[8][4][8][4]   [sub-block s][quad e][row r][k]: the low nibble is element 4e + k of sub-block s,
//                    the high nibble element 16 + 4e + k
struct BlockQ4_Kx8 {
  uint16_t d[8], dmin[8];
  uint8_t sm_lo[64];
  uint8_t sm_hi[32];
  uint8_t qs[8][4][8][4];
};

// The 6-bit scale (min) with index i of a Q4_K_R8 block.
inline int k4r8_scale(const BlockQ4_Kx8& b, int i) {
  return (b.sm_lo[i] & 15) | ((b.sm_hi[i % 32] >> (i < 32 ? 0 : 2)) & 3) << 4;
}
inline int k4r8_min(const BlockQ4_Kx8& b, int i) {
  return (b.sm_lo[i] >> 4) | ((b.sm_hi[i % 32] >> (i < 32 ? 4 : 6)) & 3) << 4;
}

// Q6_K_R8 (Folio's own, like Q4_K_R8), 1680 bytes: super-block b of 8 consecutive rows of a Q6_K matrix,
// 4 elements of each of the 8 rows per 32-byte vector; exactly Q6_K's values and 210 bytes per row and
// super-block. Group g holds elements 16g .. 16g + 15, its quad e elements 16g + 4e .. 16g + 4e + 3.
//   d[8]             fp16, row r's d
//   scales[16][8]    [group g][row r], int8
//   quartets[4]      groups 4h .. 4h + 3 (h = 0..3), in the order a kernel first reads them (one
//                    forward stream: interleaved streams of low and high bits read at half the speed
//                    from memory):
//     lo[4][8][4]    [quad e][row r][k]: the low 4 bits of element k of quad e, of group 4h in the low
//                    nibble and of group 4h + 1 in the high one
//     hi[4][8][4]    the high 2 bits, of group 4h + i in bits 2i, 2i + 1
//     lo2[4][8][4]   as lo, for groups 4h + 2 and 4h + 3
struct BlockQ6_Kx8 {
  uint16_t d[8];
  int8_t scales[16][8];
  struct Quartet {
    uint8_t lo[4][8][4];
    uint8_t hi[4][8][4];
    uint8_t lo2[4][8][4];
  } quartets[4];
};

// Q8_0_R8 (Folio's own, like Q4_K_R8), 272 bytes: block b of 8 consecutive rows of a Q8_0 matrix, 4
// elements of each of the 8 rows per 32-byte vector, in element order (quad e of every row is what one
// broadcast of 4 activation bytes multiplies); exactly Q8_0's values and 34 bytes per row and block.
//   d[8]          fp16, row r's d
//   qs[8][8][4]   [quad e][row r][k]: element 4e + k of row r
struct BlockQ8_0x8 {
  uint16_t d[8];
  int8_t qs[8][8][4];
};

// Q3_K_R8 (Folio's own, like Q4_K_R8), 880 bytes: super-block b of 8 consecutive rows of a Q3_K matrix,
// 4 elements of each of the 8 rows per 32-byte vector; exactly Q3_K's values and 110 bytes per row and
// super-block. Group j holds elements 16j .. 16j + 15, its quad e elements 16j + 4e .. 16j + 4e + 3; q in
// 0..7 is the low 2 bits plus 4 × the high bit, the value d·(sc − 32)·(q − 4) as in Q3_K.
//   d[8]             fp16, row r's d
//   sc_lo[64]        the low 4 bits of the 6-bit scales (biased by 32, as in the file): byte i holds scale
//                    i in its low nibble and scale 64 + i in its high one, where scale 8j + r is that of
//                    group j of row r (k3r8_scale below)
//   sc_hi[32]        their high 2 bits: byte i holds those of scale 32m + i in bits 2m, 2m + 1
//   octets[2]        groups 8o .. 8o + 7, in the order a kernel reads them (one forward stream):
//     hi[4][8][4]    [quad e][row r][k]: bit i is the high bit of element k of quad e of group 8o + i
//     lo[2][4][8][4] [half p][quad e][row r][k]: bits 2i, 2i + 1 are the low bits of element k of quad e
//                    of group 8o + 4p + i
struct BlockQ3_Kx8 {
  uint16_t d[8];
  uint8_t sc_lo[64];
  uint8_t sc_hi[32];
  struct Octet {
    uint8_t hi[4][8][4];
    uint8_t lo[2][4][8][4];
  } octets[2];
};

// The 6-bit scale (0..63, biased by 32) with index i = 8j + r of a Q3_K_R8 block.
inline int k3r8_scale(const BlockQ3_Kx8& b, int i) {
  return ((b.sc_lo[i % 64] >> (i < 64 ? 0 : 4)) & 15) | ((b.sc_hi[i % 32] >> (2 * (i / 32))) & 3) << 4;
}

// Q2_K_R8 (Folio's own, like Q4_K_R8), 672 bytes: super-block b of 8 consecutive rows of a Q2_K matrix,
// 4 elements of each of the 8 rows per 32-byte vector; exactly Q2_K's values and 84 bytes per row and
// super-block. Groups and quads as in Q3_K_R8.
//   d[8], dmin[8]    fp16, row r's d and dmin
//   scales[16][8]    [group j][row r]: the file's scale byte (low nibble sc, high nibble m)
//   qs[4][4][8][4]   [h][quad e][row r][k]: bits 2i, 2i + 1 are element k of quad e of group 4h + i
struct BlockQ2_Kx8 {
  uint16_t d[8], dmin[8];
  uint8_t scales[16][8];
  uint8_t qs[4][4][8][4];
};

// IQ4_XS_R8 (Folio's own, like Q4_K_R8), 1088 bytes: super-block b of 8 consecutive rows of an IQ4_XS
// matrix, 4 elements of each of the 8 rows per 32-byte vector; exactly IQ4_XS's values and 136 bytes per
// row and super-block.
//   d[8]             fp16, row r's d
//   sc_lo[32]        the low 4 bits of the 6-bit scales ls (biased by 32): byte i holds scale i in its low
//                    nibble and scale 32 + i in its high one, where scale 8s + r is that of sub-block s of
//                    row r (iq4xs_r8_scale below)
//   sc_hi[16]        their high 2 bits: byte i holds those of scale 16m + i in bits 2m, 2m + 1
//   qs[8][4][8][4]   [sub-block s][quad e][row r][k]: the file's byte qs[16s + 4e + k] of row r (code book
//                    index of element 4e + k in the low nibble, of element 16 + 4e + k in the high one)
struct BlockIQ4_XSx8 {
  uint16_t d[8];
  uint8_t sc_lo[32];
  uint8_t sc_hi[16];
  uint8_t qs[8][4][8][4];
};

inline int iq4xs_r8_scale(const BlockIQ4_XSx8& b, int i) {
  return ((b.sc_lo[i % 32] >> (i < 32 ? 0 : 4)) & 15) | ((b.sc_hi[i % 16] >> (2 * (i / 16))) & 3) << 4;
}

static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block");
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block");
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block");
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block");
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block");
static_assert(sizeof(BlockQ8_1) == 36, "Q8_1 block");
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block");
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block");
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block");
static_assert(sizeof(BlockQ8_K) == 292, "Q8_K block");
static_assert(sizeof(BlockQ2_K) == 84, "Q2_K block");
static_assert(sizeof(BlockQ3_K) == 110, "Q3_K block");
static_assert(sizeof(BlockIQ4_NL) == 18, "IQ4_NL block");
static_assert(sizeof(BlockIQ4_XS) == 136, "IQ4_XS block");
static_assert(sizeof(BlockQ4_Kx8) == 8 * 144, "Q4_K_R8 block");
static_assert(sizeof(BlockQ6_Kx8) == 8 * 210, "Q6_K_R8 block");
static_assert(sizeof(BlockQ8_0x8) == 8 * 34, "Q8_0_R8 block");
static_assert(sizeof(BlockQ3_Kx8) == 8 * 110, "Q3_K_R8 block");
static_assert(sizeof(BlockQ2_Kx8) == 8 * 84, "Q2_K_R8 block");
static_assert(sizeof(BlockIQ4_XSx8) == 8 * 136, "IQ4_XS_R8 block");

// The 12 scale bytes of Q4_K/Q5_K hold 8 six-bit scales and 8 six-bit mins:
//   bytes 0-3   bits 0-5: scale 0-3;  bits 6-7: bits 4-5 of scale 4-7
//   bytes 4-7   bits 0-5: min 0-3;    bits 6-7: bits 4-5 of min 4-7
//   bytes 8-11  bits 0-3: bits 0-3 of scale 4-7;  bits 4-7: bits 0-3 of min 4-7
inline void unpack_scales_k4(const uint8_t* s, uint8_t sc[8], uint8_t mn[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    mn[j] = s[j + 4] & 63;
    sc[j + 4] = uint8_t((s[j + 8] & 15) | ((s[j] >> 6) << 4));
    mn[j + 4] = uint8_t((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
  }
}

// The same on whole 32-bit words (little-endian), for the SIMD kernels: out bytes 0-7 are the scales,
// bytes 8-15 the mins.
inline void unpack_scales_k4_words(const uint8_t* s, uint32_t out[4]) {
  uint32_t a, b, c;
  std::memcpy(&a, s, 4);
  std::memcpy(&b, s + 4, 4);
  std::memcpy(&c, s + 8, 4);
  out[0] = a & 0x3f3f3f3fu;
  out[1] = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
  out[2] = b & 0x3f3f3f3fu;
  out[3] = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
}

// The 256 six-bit quants (0..63) of a Q6_K super-block in element order (ql and qh as laid out above).
inline void unpack_q6_k(const BlockQ6_K& b, int q[QK_K]) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    int* y = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      y[l] = (ql[l] & 15) | ((qh[l] & 3) << 4);
      y[l + 32] = (ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4);
      y[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
      y[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
    }
  }
}

}  // namespace folio::quant
