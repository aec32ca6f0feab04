// Dequantization of the GGUF weight types, eight consecutive elements of a row at a time (every quantized
// block is 32 or 256 elements, so eight never straddle a block, a Q4_K/Q5_K sub-block or a Q6_K group of
// 16). The values are bit for bit the engine's scalar reference's (quant/quant-scalar.cc): the same
// operations in the same order, with `precise` so that a product followed by an addition is rounded on
// its own, never fused. Block layouts are ggml's (ggml-common.h, facts of the GGUF format). Bytes are
// read one at a time: the weights' alignment is the GGUF file's, and 8-bit access is all the kernels
// need (the matrix kernels are bound by arithmetic on the devices this was written for; see docs/gpu.md).
// Needs common.glsl.

#define T_F32 0
#define T_F16 1
#define T_Q4_0 2
#define T_Q4_1 3
#define T_Q5_0 6
#define T_Q5_1 7
#define T_Q8_0 8
#define T_Q2_K 10
#define T_Q3_K 11
#define T_Q4_K 12
#define T_Q5_K 13
#define T_Q6_K 14
#define T_IQ4_NL 20
#define T_IQ4_XS 23
#define T_BF16 30

// IQ4_NL's and IQ4_XS's non-linear code book (ggml-common.h, kvalues_iq4nl; quant/blocks.h).
const int kIq4nlValues[16] = int[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);

uint u8_at(uint64_t a, int i) { return uint(Bytes(a).v[i]); }
uint u16_at(uint64_t a, int i) { return u8_at(a, i) | (u8_at(a, i + 1) << 8); }
uint u32_at(uint64_t a, int i) { return u16_at(a, i) | (u16_at(a, i + 2) << 16); }
float f16_at(uint64_t a, int i) { return unpackHalf2x16(u16_at(a, i)).x; }

// Bytes per block and elements per block (the plain types: "blocks" of 8 values, so a group is a block).
int block_bytes(int type) {
  switch (type) {
    case T_F32: return 32;
    case T_F16: case T_BF16: return 16;
    case T_Q4_0: return 18;
    case T_Q4_1: return 20;
    case T_Q5_0: return 22;
    case T_Q5_1: return 24;
    case T_Q8_0: return 34;
    case T_Q4_K: return 144;
    case T_Q5_K: return 176;
    case T_Q6_K: return 210;
    case T_Q2_K: return 84;
    case T_Q3_K: return 110;
    case T_IQ4_NL: return 18;
    case T_IQ4_XS: return 136;
  }
  return 0;
}
int block_elems(int type) {
  switch (type) {
    case T_F32: case T_F16: case T_BF16: return 8;
    case T_Q4_K: case T_Q5_K: case T_Q6_K: case T_Q2_K: case T_Q3_K: case T_IQ4_XS: return 256;
  }
  return 32;
}

// Scale and min of sub-block j (0..7) of a Q4_K/Q5_K block from its 12 scale bytes at s: j < 4 take the
// low 6 bits of s[j] / s[j + 4]; j ≥ 4 their low 4 bits from the nibbles of s[j + 4] and bits 4-5 from the
// top bits of s[j − 4] / s[j].
void k4_scale_min(uint64_t s, int j, out float sc, out float mn) {
  if (j < 4) {
    sc = float(u8_at(s, j) & 63u);
    mn = float(u8_at(s, j + 4) & 63u);
  } else {
    sc = float((u8_at(s, j + 4) & 15u) | ((u8_at(s, j - 4) >> 6) << 4));
    mn = float((u8_at(s, j + 4) >> 4) | ((u8_at(s, j) >> 6) << 4));
  }
}

// v[0, 8) = elements 8g .. 8g + 7 of the row at address `row` of `cols` elements; past cols (a plain
// type's partial last group) zeros, and nothing is read there.
void dequant8(uint64_t row, int type, int g, int cols, out float v[8]) {
  const int per = block_elems(type) / 8;  // groups per block
  const uint64_t blk = row + uint64_t(g / per) * uint64_t(block_bytes(type));
  const int q = g % per;  // group within the block
  const int avail = min(8, cols - 8 * g);
  if (type == T_F32) {
    for (int i = 0; i < 8; i++) v[i] = i < avail ? uintBitsToFloat(u32_at(blk, 4 * i)) : 0.0;
  } else if (type == T_F16) {
    for (int i = 0; i < 8; i++) v[i] = i < avail ? f16_at(blk, 2 * i) : 0.0;
  } else if (type == T_BF16) {
    for (int i = 0; i < 8; i++) v[i] = i < avail ? uintBitsToFloat(u16_at(blk, 2 * i) << 16) : 0.0;
  } else if (type == T_Q8_0) {  // { f16 d; i8 qs[32] }: x = qs · d
    const float d = f16_at(blk, 0);
    for (int i = 0; i < 8; i++) v[i] = float(int(int8_t(Bytes(blk).v[2 + 8 * q + i]))) * d;
  } else if (type == T_Q4_0 || type == T_Q4_1) {
    // { f16 d; [f16 m;] u8 qs[16] }: element j < 16 the low nibble of qs[j], j ≥ 16 the high of qs[j − 16];
    // Q4_0: x = (nibble − 8) · d; Q4_1: x = nibble · d + m.
    const float d = f16_at(blk, 0);
    const int qs = type == T_Q4_0 ? 2 : 4, shift = 4 * (q >> 1);
    for (int i = 0; i < 8; i++) {
      const int n = int((u8_at(blk, qs + 8 * (q & 1) + i) >> shift) & 15u);
      if (type == T_Q4_0) {
        v[i] = float(n - 8) * d;
      } else {
        precise float r = float(n) * d + f16_at(blk, 2);
        v[i] = r;
      }
    }
  } else if (type == T_Q5_0 || type == T_Q5_1) {
    // { f16 d; [f16 m;] u8 qh[4]; u8 qs[16] }: nibbles as Q4_0, bit 4 of element e is bit e of the u32 qh;
    // Q5_0: x = (q − 16) · d; Q5_1: x = q · d + m.
    const float d = f16_at(blk, 0);
    const int qh_at = type == T_Q5_0 ? 2 : 4, qs = qh_at + 4, shift = 4 * (q >> 1);
    const uint qh = u32_at(blk, qh_at) >> (8 * q);
    for (int i = 0; i < 8; i++) {
      const int n = int((u8_at(blk, qs + 8 * (q & 1) + i) >> shift) & 15u) | int((qh >> i) & 1u) << 4;
      if (type == T_Q5_0) {
        v[i] = float(n - 16) * d;
      } else {
        precise float r = float(n) * d + f16_at(blk, 2);
        v[i] = r;
      }
    }
  } else if (type == T_Q4_K || type == T_Q5_K) {
    // { f16 d, dmin; u8 scales[12]; [u8 qh[32];] u8 qs[128] }: sub-block j (32 elements) in chunk j / 2
    // of qs, low nibbles for even j, high for odd; Q5_K's fifth bit of element l of sub-block j is bit j of
    // qh[l]; x = (d·sc[j])·q − (dmin·m[j]).
    const int j = q >> 2, l0 = 8 * (q & 3);
    float sc, mn;
    k4_scale_min(blk + 4, j, sc, mn);
    precise float dj = f16_at(blk, 0) * sc;
    precise float mj = f16_at(blk, 2) * mn;
    const int qs = type == T_Q4_K ? 16 : 48, shift = 4 * (j & 1);
    for (int i = 0; i < 8; i++) {
      int n = int((u8_at(blk, qs + 32 * (j >> 1) + l0 + i) >> shift) & 15u);
      if (type == T_Q5_K) n |= int((u8_at(blk, 16 + l0 + i) >> j) & 1u) << 4;
      precise float r = dj * float(n) - mj;
      v[i] = r;
    }
  } else if (type == T_Q2_K || type == T_Q3_K) {
    // Q2_K { u8 scales[16]; u8 qs[64]; f16 d, dmin }: x = (d·(sc[g] & 15))·q − dmin·(sc[g] >> 4), q in 0..3.
    // Q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d }: x = (d·(sc[g] − 32))·q, q in −4..3, its high
    // bit bit 4h + k of hmask[l] (a clear bit subtracts 4), sc 6-bit as q3_k_scale (quant/blocks.h).
    // Both: element 128h + 32k + l (group g of 16) has its two low bits at qs[32h + l] >> 2k.
    const int h = q >> 4, r = 8 * (q & 15), k = r >> 5, l0 = r & 31, gr = q >> 1;
    const int qs = type == T_Q2_K ? 16 : 32;
    precise float dg, mg = 0.0;
    if (type == T_Q2_K) {
      const uint sc = u8_at(blk, gr);
      dg = f16_at(blk, 80) * float(sc & 15u);
      mg = f16_at(blk, 82) * float(sc >> 4);
    } else {
      const uint lo = gr < 8 ? u8_at(blk, 96 + gr) & 15u : u8_at(blk, 96 + gr - 8) >> 4;
      const uint hi = (u8_at(blk, 104 + gr % 4) >> (2 * (gr / 4))) & 3u;
      dg = f16_at(blk, 108) * float(int(lo | hi << 4) - 32);
    }
    for (int i = 0; i < 8; i++) {
      int n = int((u8_at(blk, qs + 32 * h + l0 + i) >> (2 * k)) & 3u);
      if (type == T_Q2_K) {
        precise float x = dg * float(n) - mg;
        v[i] = x;
      } else {
        n += int((u8_at(blk, l0 + i) >> (4 * h + k)) & 1u) * 4 - 4;
        v[i] = dg * float(n);
      }
    }
  } else if (type == T_IQ4_NL) {
    // { f16 d; u8 qs[16] }: nibbles as Q4_0; x = d · kIq4nlValues[nibble].
    const float d = f16_at(blk, 0);
    const int shift = 4 * (q >> 1);
    for (int i = 0; i < 8; i++) v[i] = d * float(kIq4nlValues[(u8_at(blk, 2 + 8 * (q & 1) + i) >> shift) & 15u]);
  } else if (type == T_IQ4_XS) {
    // { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128] }: sub-block j of 32 has the 6-bit scale ls (low 4
    // bits nibble j % 2 of scales_l[j / 2], high 2 bits bits 2j, 2j + 1 of scales_h), its nibbles as IQ4_NL's
    // in qs[16j ..]; x = (d·(ls − 32))·kIq4nlValues[nibble].
    const int j = q >> 2, r = q & 3, shift = 4 * (r >> 1);
    const uint ls = ((u8_at(blk, 4 + j / 2) >> (4 * (j % 2))) & 15u) | ((u16_at(blk, 2) >> (2 * j)) & 3u) << 4;
    precise float dj = f16_at(blk, 0) * float(int(ls) - 32);
    for (int i = 0; i < 8; i++)
      v[i] = dj * float(kIq4nlValues[(u8_at(blk, 8 + 16 * j + 8 * (r & 1) + i) >> shift) & 15u]);
  } else {  // T_Q6_K
    // { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d }: element 128h + 32k + l has low bits
    // ql[64h + 32(k & 1) + l] >> 4(k >> 1) and high bits qh[32h + l] >> 2k; x = (d·sc[element / 16])·(q − 32).
    const int h = q >> 4, r = 8 * (q & 15), k = r >> 5, l0 = r & 31;
    precise float dg = f16_at(blk, 208) * float(int(int8_t(Bytes(blk).v[192 + (q >> 1)])));
    const int lshift = 4 * (k >> 1), hshift = 2 * k;
    for (int i = 0; i < 8; i++) {
      const int n = int((u8_at(blk, 64 * h + 32 * (k & 1) + l0 + i) >> lshift) & 15u) |
                    int((u8_at(blk, 128 + 32 * h + l0 + i) >> hshift) & 3u) << 4;
      v[i] = dg * float(n - 32);
    }
  }
}
