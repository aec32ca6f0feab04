// Repacking at load time (repack.h), and the scalar matrix-vector products of the repacked layouts,
// which the SIMD kernels are tested against.
#include "quant/repack.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/kernels.h"

namespace folio::quant {

namespace {

constexpr int kR8 = 8;

template <typename Block>
const Block* r8_blocks(const void* group) {
  return reinterpret_cast<const Block*>(group);
}

// Rows [8·g0, 8·g1) of src into the interleaved blocks at dst (In blocks of QB elements): each Out block
// zeroed, then fill(out block, row r's In block, r) for its 8 rows.
template <typename In, typename Out, int QB, typename Fill>
void repack_rows(const uint8_t* src, size_t ld_src, int64_t cols, int64_t g0, int64_t g1, uint8_t* dst, Fill fill) {
  const int64_t nb = cols / QB;
  Out* out = reinterpret_cast<Out*>(dst);
  for (int64_t g = g0; g < g1; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      Out& o = out[g * nb + b];
      std::memset(&o, 0, sizeof(o));
      for (int r = 0; r < kR8; ++r) fill(o, reinterpret_cast<const In*>(src + size_t(g * kR8 + r) * ld_src)[b], r);
    }
  }
}

void fill_q4_k_r8(BlockQ4_Kx8& o, const BlockQ4_K& q, int r) {
  o.d[r] = q.d;
  o.dmin[r] = q.dmin;
  uint8_t sc[8], mn[8];
  unpack_scales_k4(q.scales, sc, mn);
  for (int s = 0; s < 8; ++s) {
    const int si = 8 * s + r, mi = 16 * (s / 2) + 2 * r + s % 2;  // the indices of blocks.h
    o.sm_lo[si] |= uint8_t(sc[s] & 15);
    o.sm_lo[mi] |= uint8_t((mn[s] & 15) << 4);
    o.sm_hi[si % 32] |= uint8_t((sc[s] >> 4) << (si < 32 ? 0 : 2));
    o.sm_hi[mi % 32] |= uint8_t((mn[s] >> 4) << (mi < 32 ? 4 : 6));
    // Sub-block s is in the low (s even) or high (s odd) nibbles of chunk s / 2; a word at a time:
    // elements 4e.. (a) go to the low nibbles of quad e, elements 16 + 4e.. (c) to its high ones.
    const uint8_t* chunk = q.qs + 32 * (s / 2);
    for (int e = 0; e < 4; ++e) {
      uint32_t a, c;
      std::memcpy(&a, chunk + 4 * e, 4);
      std::memcpy(&c, chunk + 16 + 4 * e, 4);
      const uint32_t v =
          s % 2 ? ((a >> 4) & 0x0f0f0f0fu) | (c & 0xf0f0f0f0u) : (a & 0x0f0f0f0fu) | ((c & 0x0f0f0f0fu) << 4);
      std::memcpy(o.qs[s][e][r], &v, 4);
    }
  }
}

void fill_q6_k_r8(BlockQ6_Kx8& o, const BlockQ6_K& q6, int r) {
  o.d[r] = q6.d;
  for (int j = 0; j < 16; ++j) {
    o.scales[j][r] = q6.scales[j];
    BlockQ6_Kx8::Quartet& qu = o.quartets[j / 4];
    for (int e = 0; e < 4; ++e) {
      // Elements n .. n + 3 lie in 4 consecutive bytes of ql (one nibble) and of qh (one bit pair):
      // element 128h + l is nibble l / 64 of ql[64h + l % 64], bits 2(l / 32) of qh[32h + l % 32].
      const int n = 16 * j + 4 * e, h = n / 128, l = n % 128;
      uint32_t lw, hw;
      std::memcpy(&lw, q6.ql + 64 * h + l % 64, 4);
      std::memcpy(&hw, q6.qh + 32 * h + l % 32, 4);
      const uint32_t lo = (lw >> (4 * (l / 64))) & 0x0f0f0f0fu, hi = (hw >> (2 * (l / 32))) & 0x03030303u;
      uint32_t a, b;
      // Indexed in each branch: GCC 12's bounds sanitizer miscompiles indexing a conditional of two arrays.
      uint8_t* lo_dst = j % 4 < 2 ? qu.lo[e][r] : qu.lo2[e][r];
      std::memcpy(&a, lo_dst, 4);
      std::memcpy(&b, qu.hi[e][r], 4);
      a |= lo << (4 * (j % 2));
      b |= hi << (2 * (j % 4));
      std::memcpy(lo_dst, &a, 4);
      std::memcpy(qu.hi[e][r], &b, 4);
    }
  }
}

void fill_q8_0_r8(BlockQ8_0x8& o, const BlockQ8_0& q, int r) {
  o.d[r] = q.d;
  for (int e = 0; e < 8; ++e) std::memcpy(o.qs[e][r], q.qs + 4 * e, 4);
}

// Elements n .. n + 3 (n a multiple of 4) of a Q2_K / Q3_K super-block's 2-bit field qs, one per byte of
// a word: element 128h + 32j + l is bits 2j, 2j + 1 of qs[32h + l] (blocks.h), and 4 consecutive
// elements are 4 consecutive bytes. Likewise Q3_K's high bits, bit 4h + j of hmask[l].
uint32_t low2_quad(const uint8_t* qs, int n) {
  uint32_t w;
  std::memcpy(&w, qs + 32 * (n / 128) + n % 32, 4);
  return (w >> (2 * ((n % 128) / 32))) & 0x03030303u;
}
uint32_t q3_high_quad(const uint8_t* hmask, int n) {
  uint32_t w;
  std::memcpy(&w, hmask + n % 32, 4);
  return (w >> (4 * (n / 128) + (n % 128) / 32)) & 0x01010101u;
}

// ORs v into the 4 bytes at p.
void or_word(uint8_t* p, uint32_t v) {
  uint32_t a;
  std::memcpy(&a, p, 4);
  a |= v;
  std::memcpy(p, &a, 4);
}

void fill_q3_k_r8(BlockQ3_Kx8& o, const BlockQ3_K& q, int r) {
  o.d[r] = q.d;
  for (int j = 0; j < 16; ++j) {
    const int s = q3_k_scale(q.scales, j), si = 8 * j + r;
    o.sc_lo[si % 64] |= uint8_t((s & 15) << (si < 64 ? 0 : 4));
    o.sc_hi[si % 32] |= uint8_t((s >> 4) << (2 * (si / 32)));
    BlockQ3_Kx8::Octet& oc = o.octets[j / 8];
    const int i = j % 8;
    for (int e = 0; e < 4; ++e) {
      const int n = 16 * j + 4 * e;
      or_word(oc.hi[e][r], q3_high_quad(q.hmask, n) << i);
      or_word(oc.lo[i / 4][e][r], low2_quad(q.qs, n) << (2 * (i % 4)));
    }
  }
}

void fill_q2_k_r8(BlockQ2_Kx8& o, const BlockQ2_K& q, int r) {
  o.d[r] = q.d;
  o.dmin[r] = q.dmin;
  for (int j = 0; j < 16; ++j) {
    o.scales[j][r] = q.scales[j];
    for (int e = 0; e < 4; ++e) or_word(o.qs[j / 4][e][r], low2_quad(q.qs, 16 * j + 4 * e) << (2 * (j % 4)));
  }
}

void fill_iq4_xs_r8(BlockIQ4_XSx8& o, const BlockIQ4_XS& q, int r) {
  o.d[r] = q.d;
  for (int s = 0; s < 8; ++s) {
    const int ls = iq4_xs_scale(q, s), si = 8 * s + r;
    o.sc_lo[si % 32] |= uint8_t((ls & 15) << (si < 32 ? 0 : 4));
    o.sc_hi[si % 16] |= uint8_t((ls >> 4) << (2 * (si / 16)));
    for (int e = 0; e < 4; ++e) std::memcpy(o.qs[s][e][r], q.qs + 16 * s + 4 * e, 4);
  }
}

// Element i (< 16) of group j of row r in a Q3_K_R8 block (0..7: the value is q − 4) or a Q2_K_R8 one.
int r8_quant(const BlockQ3_Kx8& b, int r, int j, int i) {
  const BlockQ3_Kx8::Octet& oc = b.octets[j / 8];
  const int lo = (oc.lo[(j % 8) / 4][i / 4][r][i % 4] >> (2 * (j % 4))) & 3;
  const int hi = (oc.hi[i / 4][r][i % 4] >> (j % 8)) & 1;
  return lo | hi << 2;
}
int r8_quant(const BlockQ2_Kx8& b, int r, int j, int i) { return (b.qs[j / 4][i / 4][r][i % 4] >> (2 * (j % 4))) & 3; }

// Element i (< 32) of sub-block s of row r in a Q4_K_R8 block; element i (< 16) of group j of row r in
// a Q6_K_R8 one.
int r8_quant(const BlockQ4_Kx8& b, int r, int s, int i) {
  const uint8_t byte = b.qs[s][(i % 16) / 4][r][i % 4];
  return i < 16 ? byte & 15 : byte >> 4;
}
int r8_quant(const BlockQ6_Kx8& b, int r, int j, int i) {
  const BlockQ6_Kx8::Quartet& qu = b.quartets[j / 4];
  const int lo = ((j % 4 < 2 ? qu.lo[i / 4][r][i % 4] : qu.lo2[i / 4][r][i % 4]) >> (4 * (j % 2))) & 15;
  const int hi = (qu.hi[i / 4][r][i % 4] >> (2 * (j % 4))) & 3;
  return lo | hi << 4;
}

// The reference matrix-vector products: y[t·ldy + r] for the m rows (whole groups) at w and n tokens,
// the sum over (super-)blocks of QB elements of dot(block, row, activation block), whose integer sums per
// sub-block or group are those of Q4_K's, Q6_K's or Q8_0's vec_dot.
template <typename Block, typename XBlock, int QB, float (*Dot)(const Block&, int, const XBlock&)>
void gemv_r8_scalar(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m,
                    int64_t n) {
  for (int64_t g = 0; g < m / kR8; ++g) {
    const Block* blk = r8_blocks<Block>(static_cast<const uint8_t*>(w) + size_t(g) * kR8 * ldw);
    for (int64_t t = 0; t < n; ++t) {
      const XBlock* xb = reinterpret_cast<const XBlock*>(static_cast<const uint8_t*>(x) + size_t(t) * ldx);
      for (int r = 0; r < kR8; ++r) {
        float acc = 0;
        for (int64_t b = 0; b < k / QB; ++b) acc += Dot(blk[b], r, xb[b]);
        y[t * ldy + g * kR8 + r] = acc;
      }
    }
  }
}

float dot_q4_k_r8(const BlockQ4_Kx8& b, int r, const BlockQ8_K& x) {
  int32_t isum = 0, msum = 0;
  for (int s = 0; s < 8; ++s) {
    int32_t ss = 0;
    for (int i = 0; i < 32; ++i) ss += r8_quant(b, r, s, i) * x.qs[32 * s + i];
    isum += ss * k4r8_scale(b, 8 * s + r);
    msum += k4r8_min(b, 16 * (s / 2) + 2 * r + s % 2) * (x.bsums[2 * s] + x.bsums[2 * s + 1]);
  }
  return fp16_to_f32(b.d[r]) * x.d * float(isum) - fp16_to_f32(b.dmin[r]) * x.d * float(msum);
}

float dot_q6_k_r8(const BlockQ6_Kx8& b, int r, const BlockQ8_K& x) {
  int32_t isum = 0;
  for (int j = 0; j < 16; ++j) {
    int32_t s = 0;
    for (int i = 0; i < 16; ++i) s += (r8_quant(b, r, j, i) - 32) * x.qs[16 * j + i];
    isum += s * b.scales[j][r];
  }
  return fp16_to_f32(b.d[r]) * x.d * float(isum);
}

float dot_q3_k_r8(const BlockQ3_Kx8& b, int r, const BlockQ8_K& x) {
  int32_t isum = 0;
  for (int j = 0; j < 16; ++j) {
    int32_t s = 0;
    for (int i = 0; i < 16; ++i) s += (r8_quant(b, r, j, i) - 4) * x.qs[16 * j + i];
    isum += s * (k3r8_scale(b, 8 * j + r) - 32);
  }
  return fp16_to_f32(b.d[r]) * x.d * float(isum);
}

float dot_q2_k_r8(const BlockQ2_Kx8& b, int r, const BlockQ8_K& x) {
  int32_t isum = 0, msum = 0;
  for (int j = 0; j < 16; ++j) {
    int32_t s = 0;
    for (int i = 0; i < 16; ++i) s += r8_quant(b, r, j, i) * x.qs[16 * j + i];
    isum += s * (b.scales[j][r] & 15);
    msum += (b.scales[j][r] >> 4) * x.bsums[j];
  }
  return fp16_to_f32(b.d[r]) * x.d * float(isum) - fp16_to_f32(b.dmin[r]) * x.d * float(msum);
}

// Code book index of element i (< 32) of sub-block s of row r in an IQ4_XS_R8 block.
int r8_index(const BlockIQ4_XSx8& b, int r, int s, int i) {
  const uint8_t byte = b.qs[s][(i % 16) / 4][r][i % 4];
  return i < 16 ? byte & 15 : byte >> 4;
}

float dot_iq4_xs_r8(const BlockIQ4_XSx8& b, int r, const BlockQ8_K& x) {
  int32_t isum = 0;
  for (int s = 0; s < 8; ++s) {
    int32_t ss = 0;
    for (int i = 0; i < 32; ++i) ss += kIq4nlValues[r8_index(b, r, s, i)] * x.qs[32 * s + i];
    isum += ss * (iq4xs_r8_scale(b, 8 * s + r) - 32);
  }
  return fp16_to_f32(b.d[r]) * x.d * float(isum);
}

float dot_q8_0_r8(const BlockQ8_0x8& b, int r, const BlockQ8_0& x) {
  int32_t isum = 0;
  for (int i = 0; i < QK; ++i) isum += b.qs[i / 4][r][i % 4] * x.qs[i];
  return float(isum) * (fp16_to_f32(b.d[r]) * fp16_to_f32(x.d));
}

}  // namespace

int64_t row_group(TensorType type) {
  return type == TensorType::Q4_K_R8 || type == TensorType::Q6_K_R8 || type == TensorType::Q8_0_R8 ||
                 type == TensorType::Q3_K_R8 || type == TensorType::Q2_K_R8 || type == TensorType::IQ4_XS_R8
             ? kR8
             : 1;
}

TensorType cpu_layout(TensorType type, int64_t rows, Isa isa) {
  static const bool off = [] {
    const char* env = std::getenv("FOLIO_REPACK");
    return env && std::strcmp(env, "0") == 0;
  }();
  if (off || rows % kR8 != 0) return type;
  // Only where the kernels of the repacked layout are faster (docs/benchmarks-log.md): the scalar ones are
  // references; AVX-512 has a Q6_K matrix-vector kernel of its own that reads faster than the
  // AVX2 one of Q6_K_R8.
  if (type == TensorType::Q4_K && (isa == Isa::AVX2 || isa == Isa::AVX512)) return TensorType::Q4_K_R8;
  if (type == TensorType::Q6_K && isa == Isa::AVX2) return TensorType::Q6_K_R8;
  if (type == TensorType::Q8_0 && (isa == Isa::AVX2 || isa == Isa::AVX512)) return TensorType::Q8_0_R8;
  if (type == TensorType::Q3_K && (isa == Isa::AVX2 || isa == Isa::AVX512)) return TensorType::Q3_K_R8;
  if (type == TensorType::Q2_K && (isa == Isa::AVX2 || isa == Isa::AVX512)) return TensorType::Q2_K_R8;
  if (type == TensorType::IQ4_XS && (isa == Isa::AVX2 || isa == Isa::AVX512)) return TensorType::IQ4_XS_R8;
  return type;
}

void repack_groups(TensorType type, TensorType to, const uint8_t* src, size_t ld_src, int64_t cols, int64_t g0,
                   int64_t g1, uint8_t* dst) {
  if (type == TensorType::Q4_K && to == TensorType::Q4_K_R8)
    return repack_rows<BlockQ4_K, BlockQ4_Kx8, QK_K>(src, ld_src, cols, g0, g1, dst, fill_q4_k_r8);
  if (type == TensorType::Q6_K && to == TensorType::Q6_K_R8)
    return repack_rows<BlockQ6_K, BlockQ6_Kx8, QK_K>(src, ld_src, cols, g0, g1, dst, fill_q6_k_r8);
  if (type == TensorType::Q8_0 && to == TensorType::Q8_0_R8)
    return repack_rows<BlockQ8_0, BlockQ8_0x8, QK>(src, ld_src, cols, g0, g1, dst, fill_q8_0_r8);
  if (type == TensorType::Q3_K && to == TensorType::Q3_K_R8)
    return repack_rows<BlockQ3_K, BlockQ3_Kx8, QK_K>(src, ld_src, cols, g0, g1, dst, fill_q3_k_r8);
  if (type == TensorType::Q2_K && to == TensorType::Q2_K_R8)
    return repack_rows<BlockQ2_K, BlockQ2_Kx8, QK_K>(src, ld_src, cols, g0, g1, dst, fill_q2_k_r8);
  if (type == TensorType::IQ4_XS && to == TensorType::IQ4_XS_R8)
    return repack_rows<BlockIQ4_XS, BlockIQ4_XSx8, QK_K>(src, ld_src, cols, g0, g1, dst, fill_iq4_xs_r8);
  fail("INTERNAL", strfmt("no repacking of %s into %s", type_name(type), type_name(to)));
}

void dequantize_repacked_row(TensorType layout, const uint8_t* group, int lane, int64_t cols, float* y) {
  if (layout == TensorType::Q4_K_R8) {
    const BlockQ4_Kx8* blk = r8_blocks<BlockQ4_Kx8>(group);
    for (int64_t b = 0; b < cols / QK_K; ++b) {
      const float d = fp16_to_f32(blk[b].d[lane]), dmin = fp16_to_f32(blk[b].dmin[lane]);
      for (int s = 0; s < 8; ++s) {
        const float ds = d * float(k4r8_scale(blk[b], 8 * s + lane));
        const float m = dmin * float(k4r8_min(blk[b], 16 * (s / 2) + 2 * lane + s % 2));
        for (int i = 0; i < 32; ++i) *y++ = ds * float(r8_quant(blk[b], lane, s, i)) - m;
      }
    }
    return;
  }
  if (layout == TensorType::Q6_K_R8) {
    const BlockQ6_Kx8* blk = r8_blocks<BlockQ6_Kx8>(group);
    for (int64_t b = 0; b < cols / QK_K; ++b) {
      const float d = fp16_to_f32(blk[b].d[lane]);
      for (int j = 0; j < 16; ++j) {
        const float dg = d * float(blk[b].scales[j][lane]);
        for (int i = 0; i < 16; ++i) *y++ = dg * float(r8_quant(blk[b], lane, j, i) - 32);
      }
    }
    return;
  }
  if (layout == TensorType::Q8_0_R8) {
    const BlockQ8_0x8* blk = r8_blocks<BlockQ8_0x8>(group);
    for (int64_t b = 0; b < cols / QK; ++b) {
      const float d = fp16_to_f32(blk[b].d[lane]);
      for (int i = 0; i < QK; ++i) *y++ = float(blk[b].qs[i / 4][lane][i % 4]) * d;
    }
    return;
  }
  if (layout == TensorType::Q3_K_R8) {  // as dequantize_q3_k: d·(sc − 32), then times q − 4
    const BlockQ3_Kx8* blk = r8_blocks<BlockQ3_Kx8>(group);
    for (int64_t b = 0; b < cols / QK_K; ++b) {
      const float d = fp16_to_f32(blk[b].d[lane]);
      for (int j = 0; j < 16; ++j) {
        const float dg = d * float(k3r8_scale(blk[b], 8 * j + lane) - 32);
        for (int i = 0; i < 16; ++i) *y++ = dg * float(r8_quant(blk[b], lane, j, i) - 4);
      }
    }
    return;
  }
  if (layout == TensorType::Q2_K_R8) {  // as dequantize_q2_k
    const BlockQ2_Kx8* blk = r8_blocks<BlockQ2_Kx8>(group);
    for (int64_t b = 0; b < cols / QK_K; ++b) {
      const float d = fp16_to_f32(blk[b].d[lane]), dmin = fp16_to_f32(blk[b].dmin[lane]);
      for (int j = 0; j < 16; ++j) {
        const float dg = d * float(blk[b].scales[j][lane] & 15), mg = dmin * float(blk[b].scales[j][lane] >> 4);
        for (int i = 0; i < 16; ++i) *y++ = dg * float(r8_quant(blk[b], lane, j, i)) - mg;
      }
    }
    return;
  }
  if (layout == TensorType::IQ4_XS_R8) {  // as dequantize_iq4_xs: d·(ls − 32), then times the value
    const BlockIQ4_XSx8* blk = r8_blocks<BlockIQ4_XSx8>(group);
    for (int64_t b = 0; b < cols / QK_K; ++b) {
      const float d = fp16_to_f32(blk[b].d[lane]);
      for (int s = 0; s < 8; ++s) {
        const float ds = d * float(iq4xs_r8_scale(blk[b], 8 * s + lane) - 32);
        for (int i = 0; i < 32; ++i) *y++ = ds * float(kIq4nlValues[r8_index(blk[b], lane, s, i)]);
      }
    }
    return;
  }
  fail("INTERNAL", strfmt("%s is not a repacked layout", type_name(layout)));
}

void add_repacked_scalar_kernels(KernelTable& t) {
  slot(t, TensorType::Q4_K_R8).gemv = gemv_r8_scalar<BlockQ4_Kx8, BlockQ8_K, QK_K, dot_q4_k_r8>;
  slot(t, TensorType::Q6_K_R8).gemv = gemv_r8_scalar<BlockQ6_Kx8, BlockQ8_K, QK_K, dot_q6_k_r8>;
  slot(t, TensorType::Q8_0_R8).gemv = gemv_r8_scalar<BlockQ8_0x8, BlockQ8_0, QK, dot_q8_0_r8>;
  slot(t, TensorType::Q3_K_R8).gemv = gemv_r8_scalar<BlockQ3_Kx8, BlockQ8_K, QK_K, dot_q3_k_r8>;
  slot(t, TensorType::Q2_K_R8).gemv = gemv_r8_scalar<BlockQ2_Kx8, BlockQ8_K, QK_K, dot_q2_k_r8>;
  slot(t, TensorType::IQ4_XS_R8).gemv = gemv_r8_scalar<BlockIQ4_XSx8, BlockQ8_K, QK_K, dot_iq4_xs_r8>;
}

}  // namespace folio::quant
