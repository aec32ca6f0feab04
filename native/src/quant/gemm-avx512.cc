// AVX-512 blocked matrix-product kernels (gemm.h describes tiles and panels), where 512-bit vectors and
// VNNI pay off; every other type keeps the AVX2 kernels (gemm-avx2.cc).
//   F32, F16, BF16     4 rows × 6 tokens of 16-wide FMA accumulators; row tails by masked loads.
//   BF16 (AVX512-BF16) the same tiles over vdpbf16ps: 32 weight × activation pairs per instruction, twice
//                      the FMA rate, with the same products (the activations are BF16 for BF16 weights).
//   Q8_0, Q4_0, Q5_0   (VNNI) two blocks per vector: the weights are unpacked biased by +128 (unsigned),
//                      vpdpbusd sums (w + 128)·x exactly in int32 starting from −128·Σx, which it computes
//                      from the same x; then one FMA with the two blocks' scale products.
//   Q2_K .. Q6_K       the AVX2 panel (PanelK), two sub-blocks per vector: vpmaddubsw, then vpdpwssd
//                      (VNNI) or vpmaddwd + vpaddd against the panel's scale vectors.
// Integer sums per block are exact and equal to vec_dot's; float scaling and order differ (float rounding).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "quant/kernels.h"

#if FOLIO_QUANT_X86

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "quant/avx2-common.h"
#include "quant/blocks.h"
#include "quant/gemm.h"

#define FOLIO_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define FOLIO_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define FOLIO_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")))

namespace folio::quant {
namespace avx512gemm {
namespace {

using avx2::h2f;
using avx2::k4_scales16;
using avx2::load128;
using avx2::load256;

FOLIO_AVX512 float hsum(__m512 v) {
  return avx2::hsum(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

// ---------------------------------------------------------------------------------------------------
// F32 / F16 / BF16: loads of 16 elements, the last (partial) step with a mask.

struct LoadF32 {
  FOLIO_AVX512 static __m512 v(const uint8_t* p, int64_t c) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(p) + c);
  }
  FOLIO_AVX512 static __m512 m(const uint8_t* p, int64_t c, __mmask16 k) {
    return _mm512_maskz_loadu_ps(k, reinterpret_cast<const float*>(p) + c);
  }
};
struct LoadF16 {
  FOLIO_AVX512 static __m512 v(const uint8_t* p, int64_t c) {
    return _mm512_cvtph_ps(load256(reinterpret_cast<const uint16_t*>(p) + c));
  }
  FOLIO_AVX512 static __m512 m(const uint8_t* p, int64_t c, __mmask16 k) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, reinterpret_cast<const uint16_t*>(p) + c));
  }
};
struct LoadBF16 {
  FOLIO_AVX512 static __m512 v(const uint8_t* p, int64_t c) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(load256(reinterpret_cast<const uint16_t*>(p) + c)), 16));
  }
  FOLIO_AVX512 static __m512 m(const uint8_t* p, int64_t c, __mmask16 k) {
    const __m256i h = _mm256_maskz_loadu_epi16(k, reinterpret_cast<const uint16_t*>(p) + c);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
};

template <typename L>
struct FloatTile {
  template <int RM, int RN>
  struct T {
    FOLIO_AVX512 static void run(const TileArgs& a) {
      __m512 acc[RM][RN];
      for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_setzero_ps();
      int64_t c = 0;
      for (; c + 16 <= a.k; c += 16) {
        __m512 xv[RN];
        for (int j = 0; j < RN; ++j) xv[j] = L::v(a.x + j * a.ldx, c);
        for (int i = 0; i < RM; ++i) {
          const __m512 wv = L::v(a.w + i * a.ldw, c);
          for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
        }
      }
      if (c < a.k) {
        const __mmask16 k = __mmask16((1u << (a.k - c)) - 1);
        __m512 xv[RN];
        for (int j = 0; j < RN; ++j) xv[j] = L::m(a.x + j * a.ldx, c, k);
        for (int i = 0; i < RM; ++i) {
          const __m512 wv = L::m(a.w + i * a.ldw, c, k);
          for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_fmadd_ps(wv, xv[j], acc[i][j]);
        }
      }
      for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = hsum(acc[i][j]);
    }
  };
};

FOLIO_FLOAT_GEMMS(4, 6)

// BF16 weights × BF16 activations by vdpbf16ps: each float lane adds the products of one pair of columns,
// each product exact in float and each addition rounded to nearest even (denormal inputs read as zero), as
// the FMA tile rounds once per column: the same error bound. 32 columns a step, the tail by masked loads.
template <int RM, int RN>
struct TileBF16Dot {
  FOLIO_AVX512_BF16 static __m512bh load(const uint8_t* p, int64_t c) {
    return __m512bh(_mm512_loadu_si512(reinterpret_cast<const uint16_t*>(p) + c));
  }
  FOLIO_AVX512_BF16 static __m512bh load(const uint8_t* p, int64_t c, __mmask32 k) {
    return __m512bh(_mm512_maskz_loadu_epi16(k, reinterpret_cast<const uint16_t*>(p) + c));
  }
  FOLIO_AVX512_BF16 static void run(const TileArgs& a) {
    __m512 acc[RM][RN];
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 32 <= a.k; c += 32) {
      __m512bh xv[RN];
      for (int j = 0; j < RN; ++j) xv[j] = load(a.x + j * a.ldx, c);
      for (int i = 0; i < RM; ++i) {
        const __m512bh wv = load(a.w + i * a.ldw, c);
        for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv, xv[j]);
      }
    }
    if (c < a.k) {
      const __mmask32 k = __mmask32((uint64_t(1) << (a.k - c)) - 1);
      __m512bh xv[RN];
      for (int j = 0; j < RN; ++j) xv[j] = load(a.x + j * a.ldx, c, k);
      for (int i = 0; i < RM; ++i) {
        const __m512bh wv = load(a.w + i * a.ldw, c, k);
        for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv, xv[j]);
      }
    }
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = hsum(acc[i][j]);
  }
};
const TileTable<TileBF16Dot, 4, 6> kTilesBF16Dot;
FOLIO_GEMM(gemm_bf16_dot, kTilesBF16Dot, nullptr, 0, nullptr, 0)
// ---------------------------------------------------------------------------------------------------
// Q8_0, Q4_0, Q5_0 with VNNI: a panel of block pairs, quants biased to unsigned.

// Two consecutive blocks of one row: qs[0..32) = block 2p, qs[32..64) = block 2p + 1, each w + 128;
// a missing second block (odd block count) has d = 0 and w = 0.
struct PanelQ8x2 {
  uint8_t qs[64];
  float d[2];
};
static_assert(sizeof(PanelQ8x2) == 72, "PanelQ8x2");

template <int RM, int RN>
struct TileQ8x2 {
  FOLIO_AVX512_VNNI static void run(const TileArgs& a) {
    const int64_t nb = a.k / QK, np = (nb + 1) / 2;
    __m512 acc[RM][RN];
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_setzero_ps();
    const __m512i bias = _mm512_set1_epi8(char(0x80));
    for (int64_t p = 0; p < np; ++p) {
      const bool pair = 2 * p + 1 < nb;
      __m512i xq[RN], neg[RN];
      __m512 xd[RN];
      for (int j = 0; j < RN; ++j) {
        const BlockQ8_0* xb = reinterpret_cast<const BlockQ8_0*>(a.x + j * a.ldx) + 2 * p;
        const __m256i hi = pair ? load256(xb[1].qs) : _mm256_setzero_si256();
        xq[j] = _mm512_inserti64x4(_mm512_castsi256_si512(load256(xb[0].qs)), hi, 1);
        // −128·Σx per group of four, so that vpdpbusd of (w + 128) with x starting there gives Σ w·x
        neg[j] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, xq[j]));
        const float* s = a.xs + j * a.ldxs + 2 * p;
        xd[j] = _mm512_mask_broadcastss_ps(_mm512_set1_ps(s[0]), 0xff00, _mm_load_ss(s + 1));
      }
      for (int i = 0; i < RM; ++i) {
        const PanelQ8x2& wb = reinterpret_cast<const PanelQ8x2*>(a.w + i * a.ldw)[p];
        const __m512i wq = _mm512_loadu_si512(wb.qs);
        const __m512 wd = _mm512_mask_broadcastss_ps(_mm512_set1_ps(wb.d[0]), 0xff00, _mm_load_ss(&wb.d[1]));
        for (int j = 0; j < RN; ++j) {
          const __m512i s = _mm512_dpbusd_epi32(neg[j], wq, xq[j]);
          acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(wd, xd[j]), acc[i][j]);
        }
      }
    }
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = hsum(acc[i][j]);
  }
};
const TileTable<TileQ8x2, 4, 3> kTilesQ8x2;

// Activation scales as floats, each row padded to an even count with 0.
FOLIO_AVX512 int64_t prep_q8_0(int64_t k, const uint8_t* x, size_t ldx, int64_t n, float* dst) {
  const int64_t nb = k / QK, ld = (nb + 1) / 2 * 2;
  for (int64_t j = 0; j < n; ++j) {
    const BlockQ8_0* xb = reinterpret_cast<const BlockQ8_0*>(x + j * ldx);
    for (int64_t b = 0; b < nb; ++b) dst[j * ld + b] = h2f(xb[b].d);
    if (ld > nb) dst[j * ld + nb] = 0;
  }
  return ld;
}

// Unpacks rm rows with `unpack(row, block) -> signed int8 quants` into block pairs.
template <typename Block, typename Unpack>
FOLIO_AVX512 size_t pack_pairs(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst, Unpack unpack) {
  const int64_t nb = k / QK, np = (nb + 1) / 2;
  const __m256i bias = _mm256_set1_epi8(char(0x80));
  for (int i = 0; i < rm; ++i) {
    const Block* src = reinterpret_cast<const Block*>(w + i * ldw);
    PanelQ8x2* out = reinterpret_cast<PanelQ8x2*>(dst) + i * np;
    for (int64_t b = 0; b < nb; ++b) {
      PanelQ8x2& o = out[b / 2];
      o.d[b & 1] = h2f(src[b].d);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.qs + 32 * (b & 1)), _mm256_xor_si256(unpack(src[b]), bias));
    }
    if (nb & 1) {
      out[np - 1].d[1] = 0;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[np - 1].qs + 32), bias);
    }
  }
  return size_t(np) * sizeof(PanelQ8x2);
}

struct UnpackQ8_0 {
  FOLIO_AVX512 __m256i operator()(const BlockQ8_0& b) const { return load256(b.qs); }
};
struct UnpackQ4_0 {
  FOLIO_AVX512 __m256i operator()(const BlockQ4_0& b) const {
    return _mm256_sub_epi8(avx2::nibbles16(b.qs), _mm256_set1_epi8(8));
  }
};
struct UnpackQ5_0 {
  FOLIO_AVX512 __m256i operator()(const BlockQ5_0& b) const {
    uint32_t bits;
    std::memcpy(&bits, b.qh, 4);
    const __m256i q =
        _mm256_or_si256(avx2::nibbles16(b.qs), _mm256_and_si256(avx2::bits_to_bytes(bits), _mm256_set1_epi8(16)));
    return _mm256_sub_epi8(q, _mm256_set1_epi8(16));
  }
};

struct UnpackIQ4_NL {
  FOLIO_AVX512 __m256i operator()(const BlockIQ4_NL& b) const {
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(load128(kIq4nlValues)), avx2::nibbles16(b.qs));
  }
};

FOLIO_AVX512 size_t pack_q8_0(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  return pack_pairs<BlockQ8_0>(k, w, ldw, rm, dst, UnpackQ8_0{});
}
FOLIO_AVX512 size_t pack_q4_0(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  return pack_pairs<BlockQ4_0>(k, w, ldw, rm, dst, UnpackQ4_0{});
}
FOLIO_AVX512 size_t pack_q5_0(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  return pack_pairs<BlockQ5_0>(k, w, ldw, rm, dst, UnpackQ5_0{});
}
FOLIO_AVX512 size_t pack_iq4_nl(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  return pack_pairs<BlockIQ4_NL>(k, w, ldw, rm, dst, UnpackIQ4_NL{});
}

#define PAIRS_PANEL size_t((k / QK + 1) / 2) * sizeof(PanelQ8x2)
#define PAIRS_PREP ((k / QK + 1) / 2 * 2)
FOLIO_GEMM(gemm_q8_0, kTilesQ8x2, pack_q8_0, PAIRS_PANEL, prep_q8_0, PAIRS_PREP)
FOLIO_GEMM(gemm_q4_0, kTilesQ8x2, pack_q4_0, PAIRS_PANEL, prep_q8_0, PAIRS_PREP)
FOLIO_GEMM(gemm_q5_0, kTilesQ8x2, pack_q5_0, PAIRS_PANEL, prep_q8_0, PAIRS_PREP)
FOLIO_GEMM(gemm_iq4_nl, kTilesQ8x2, pack_iq4_nl, PAIRS_PANEL, prep_q8_0, PAIRS_PREP)
#undef PAIRS_PANEL
#undef PAIRS_PREP

// ---------------------------------------------------------------------------------------------------
// Q4_K, Q5_K, Q6_K: the AVX2 panels (PanelK, packed by the AVX2 code), 64 elements per step.

PackFn g_pack_q4_k = nullptr, g_pack_q5_k = nullptr, g_pack_q6_k = nullptr;

// The tile body, with DOT(acc, p, sc) the step adding the pairs p (vpmaddubsw) times the scales sc.
#define FOLIO_TILE_K_BODY(DOT)                                                                                 \
  const int64_t nb = a.k / QK_K;                                                                               \
  __m512 acc[RM][RN];                                                                                          \
  for (int i = 0; i < RM; ++i)                                                                                 \
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_setzero_ps();                                              \
  for (int64_t b = 0; b < nb; ++b) {                                                                           \
    const BlockQ8_K* xb[RN];                                                                                   \
    for (int j = 0; j < RN; ++j) xb[j] = reinterpret_cast<const BlockQ8_K*>(a.x + j * a.ldx) + b;              \
    const PanelK* wb[RM];                                                                                      \
    for (int i = 0; i < RM; ++i) wb[i] = reinterpret_cast<const PanelK*>(a.w + i * a.ldw) + b;                 \
    __m512i isum[RM][RN];                                                                                      \
    for (int i = 0; i < RM; ++i)                                                                               \
      for (int j = 0; j < RN; ++j) isum[i][j] = _mm512_setzero_si512();                                        \
    for (int s = 0; s < QK_K / 64; ++s) {                                                                      \
      __m512i xq[RN];                                                                                          \
      for (int j = 0; j < RN; ++j) xq[j] = _mm512_loadu_si512(xb[j]->qs + 64 * s);                             \
      for (int i = 0; i < RM; ++i) {                                                                           \
        const __m512i q = _mm512_load_si512(wb[i]->q + 64 * s);                                                \
        const __m512i sc = _mm512_load_si512(wb[i]->sc[2 * s]);                                                \
        for (int j = 0; j < RN; ++j) isum[i][j] = DOT(isum[i][j], _mm512_maddubs_epi16(q, xq[j]), sc);         \
      }                                                                                                        \
    }                                                                                                          \
    for (int j = 0; j < RN; ++j) {                                                                             \
      const __m256i bs = load256(xb[j]->bsums);                                                                \
      const float dy = xb[j]->d;                                                                               \
      for (int i = 0; i < RM; ++i) {                                                                           \
        const __m256i off = _mm256_load_si256(reinterpret_cast<const __m256i*>(wb[i]->off));                   \
        const __m512 msum = _mm512_cvtepi32_ps(_mm512_zextsi256_si512(_mm256_madd_epi16(bs, off)));            \
        acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i][j]), _mm512_set1_ps(wb[i]->d * dy), acc[i][j]); \
        acc[i][j] = _mm512_fnmadd_ps(msum, _mm512_set1_ps(wb[i]->dmin * dy), acc[i][j]);                       \
      }                                                                                                        \
    }                                                                                                          \
  }                                                                                                            \
  for (int i = 0; i < RM; ++i)                                                                                 \
    for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = hsum(acc[i][j]);

FOLIO_AVX512 __m512i dot_madd(__m512i acc, __m512i p, __m512i sc) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(p, sc));
}
FOLIO_AVX512_VNNI __m512i dot_vnni(__m512i acc, __m512i p, __m512i sc) { return _mm512_dpwssd_epi32(acc, p, sc); }

template <int RM, int RN>
struct TileK {
  FOLIO_AVX512 static void run(const TileArgs& a) { FOLIO_TILE_K_BODY(dot_madd) }
};
template <int RM, int RN>
struct TileKVnni {
  FOLIO_AVX512_VNNI static void run(const TileArgs& a) { FOLIO_TILE_K_BODY(dot_vnni) }
};
#undef FOLIO_TILE_K_BODY
const TileTable<TileK, 4, 4> kTilesK;
const TileTable<TileKVnni, 4, 4> kTilesKVnni;

#define K_PANEL size_t(k / QK_K) * sizeof(PanelK)
FOLIO_GEMM(gemm_q4_k, kTilesK, g_pack_q4_k, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q5_k, kTilesK, g_pack_q5_k, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q6_k, kTilesK, g_pack_q6_k, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q4_k_vnni, kTilesKVnni, g_pack_q4_k, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q5_k_vnni, kTilesKVnni, g_pack_q5_k, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q6_k_vnni, kTilesKVnni, g_pack_q6_k, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q2_k, kTilesK, pack_q2_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q3_k, kTilesK, pack_q3_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q2_k_vnni, kTilesKVnni, pack_q2_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q3_k_vnni, kTilesKVnni, pack_q3_k_portable, K_PANEL, nullptr, 0)
#undef K_PANEL
#undef FOLIO_GEMM

// ---------------------------------------------------------------------------------------------------
// Q4_K / Q5_K matrix-vector product (decode), 128 elements (four sub-blocks) per step: one 64-byte load
// of packed nibbles holds sub-blocks 4j and 4j + 2 in its low nibbles, 4j + 1 and 4j + 3 in its high ones;
// two 128-bit-lane shuffles put them in element order, against plain 64-byte loads of the activations.
// The scales and mins are unpacked in registers; the block's float step scales the scale sums and the
// min sums together (lanes 0-7 and 8-15 of one vector). A quarter faster than 64 elements per step,
// which matters because two cores compute this product slower than some machines stream it.

FOLIO_AVX512 __m512i k4_dot_madd(__m512i acc, __m512i p, __m512i s) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(p, s));
}
FOLIO_AVX512_VNNI __m512i k4_dot_vnni(__m512i acc, __m512i p, __m512i s) { return _mm512_dpwssd_epi32(acc, p, s); }

// y[t·ldy] = row · x_t for NT tokens, row nb super-blocks of Q4_K (or Q5_K) at w.
#define FOLIO_GEMV_K4_BODY(DOT)                                                                                        \
  using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;                                                          \
  const Block* blk = reinterpret_cast<const Block*>(w);                                                                \
  __m512 acc[NT];                                                                                                      \
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();                                                           \
  const __m512i m4 = _mm512_set1_epi8(15);                                                                             \
  /* int16 lanes 0-15 of a scale vector take sub-block s's scale, 16-31 sub-block s + 1's */                           \
  const __m512i half = _mm512_mask_blend_epi16(0xffff0000u, _mm512_setzero_si512(), _mm512_set1_epi16(1));             \
  /* the mins (int16 lanes 8-15 of k4_scales16), each twice: against bsums' pairs of 16 */                             \
  const __m256i min_pairs = _mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);             \
  /* float lanes 0-7 take d (scale sums), 8-15 dmin (min sums) */                                                      \
  const __m512i d_dmin = _mm512_mask_blend_epi32(0xff00, _mm512_setzero_si512(), _mm512_set1_epi32(1));                \
  for (int64_t b = 0; b < nb; ++b) {                                                                                   \
    const __m256i sm = k4_scales16(blk[b].scales);                                                                     \
    const __m512i sc = _mm512_castsi256_si512(sm);                                                                     \
    const BlockQ8_K* xb[NT];                                                                                           \
    __m512i isum[NT];                                                                                                  \
    for (int t = 0; t < NT; ++t)                                                                                       \
      xb[t] = reinterpret_cast<const BlockQ8_K*>(x + t * ldx) + b, isum[t] = _mm512_setzero_si512();                   \
    __m512i hb;                                                                                                        \
    if constexpr (Q5) hb = _mm512_broadcast_i64x4(load256(reinterpret_cast<const BlockQ5_K&>(blk[b]).qh));             \
    for (int j = 0; j < 2; ++j) {                                                                                      \
      const __m512i v = _mm512_loadu_si512(blk[b].qs + 64 * j);                                                        \
      const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);                  \
      __m512i qa = _mm512_shuffle_i64x2(lo, hi, 0x44); /* elements 128j + 0..63: sub-blocks 4j, 4j + 1 */              \
      __m512i qb = _mm512_shuffle_i64x2(lo, hi, 0xee); /* 128j + 64..127: sub-blocks 4j + 2, 4j + 3 */                 \
      if constexpr (Q5) {                              /* bit s of qh[l]: the fifth bit of element l of sub-block s */ \
        const __m512i one = _mm512_set1_epi8(1);                                                                       \
        const __m512i shift_a = _mm512_add_epi16(half, _mm512_set1_epi16(short(4 * j)));                               \
        const __m512i shift_b = _mm512_add_epi16(half, _mm512_set1_epi16(short(4 * j + 2)));                           \
        qa = _mm512_or_si512(qa, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, shift_a), one), 4));         \
        qb = _mm512_or_si512(qb, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, shift_b), one), 4));         \
      }                                                                                                                \
      const __m512i sa = _mm512_permutexvar_epi16(_mm512_add_epi16(half, _mm512_set1_epi16(short(4 * j))), sc);        \
      const __m512i sb = _mm512_permutexvar_epi16(_mm512_add_epi16(half, _mm512_set1_epi16(short(4 * j + 2))), sc);    \
      for (int t = 0; t < NT; ++t) {                                                                                   \
        isum[t] = DOT(isum[t], _mm512_maddubs_epi16(qa, _mm512_loadu_si512(xb[t]->qs + 128 * j)), sa);                 \
        isum[t] = DOT(isum[t], _mm512_maddubs_epi16(qb, _mm512_loadu_si512(xb[t]->qs + 128 * j + 64)), sb);            \
      }                                                                                                                \
    }                                                                                                                  \
    const __m256i mn = _mm256_permutexvar_epi16(min_pairs, sm);                                                        \
    int32_t ddm;                                                                                                       \
    std::memcpy(&ddm, &blk[b].d, 4); /* d, dmin: adjacent halves */                                                    \
    const __m512 dd = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(ddm)));                                    \
    for (int t = 0; t < NT; ++t) {                                                                                     \
      const __m256i msum = _mm256_madd_epi16(load256(xb[t]->bsums), mn);                                               \
      const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(isum[t]), _mm512_extracti64x4_epi64(isum[t], 1));     \
      const __m512 f = _mm512_cvtepi32_ps(_mm512_inserti64x4(_mm512_castsi256_si512(s8), msum, 1));                    \
      const __m512 scale = _mm512_permutexvar_ps(d_dmin, _mm512_mul_ps(dd, _mm512_set1_ps(xb[t]->d)));                 \
      acc[t] = _mm512_fmadd_ps(f, scale, acc[t]);                                                                      \
    }                                                                                                                  \
  }                                                                                                                    \
  for (int t = 0; t < NT; ++t)                                                                                         \
    y[t * ldy] = avx2::hsum(_mm512_castps512_ps256(acc[t])) - avx2::hsum(_mm512_extractf32x8_ps(acc[t], 1));

template <int NT, bool Q5>
FOLIO_AVX512 void gemv_k4_row(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y, int64_t ldy) {
  FOLIO_GEMV_K4_BODY(k4_dot_madd)
}
template <int NT, bool Q5>
FOLIO_AVX512_VNNI void gemv_k4_row_vnni(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y,
                                        int64_t ldy) {
  FOLIO_GEMV_K4_BODY(k4_dot_vnni)
}
#undef FOLIO_GEMV_K4_BODY

template <bool Q5, bool VNNI>
constexpr auto gemv_k4 = VNNI ? gemv_k_quant<gemv_k4_row_vnni<1, Q5>, gemv_k4_row_vnni<2, Q5>, gemv_k4_row_vnni<3, Q5>>
                              : gemv_k_quant<gemv_k4_row<1, Q5>, gemv_k4_row<2, Q5>, gemv_k4_row<3, Q5>>;

}  // namespace
}  // namespace avx512gemm

void add_avx512_gemm(KernelTable& t, bool vnni) {
  using namespace avx512gemm;
  slot(t, TensorType::F32).gemm = gemm_f32;
  slot(t, TensorType::F16).gemm = gemm_f16;
  // The extension (VNNI) table takes AVX512-BF16 too where the CPU has it (Zen 4 and 5, Sapphire Rapids):
  // both variants are then tested against the scalar dot (matmul-selftest's avx512 and avx512+ext).
  slot(t, TensorType::BF16).gemm = vnni && cpu_has_avx512_bf16() ? gemm_bf16_dot : gemm_bf16;
  g_pack_q4_k = avx2_k_packer(TensorType::Q4_K);
  g_pack_q5_k = avx2_k_packer(TensorType::Q5_K);
  g_pack_q6_k = avx2_k_packer(TensorType::Q6_K);
  slot(t, TensorType::Q4_K).gemm = vnni ? gemm_q4_k_vnni : gemm_q4_k;
  slot(t, TensorType::Q4_K).gemv = vnni ? gemv_k4<false, true> : gemv_k4<false, false>;
  slot(t, TensorType::Q5_K).gemv = vnni ? gemv_k4<true, true> : gemv_k4<true, false>;
  slot(t, TensorType::Q5_K).gemm = vnni ? gemm_q5_k_vnni : gemm_q5_k;
  slot(t, TensorType::Q6_K).gemm = vnni ? gemm_q6_k_vnni : gemm_q6_k;
  slot(t, TensorType::Q2_K).gemm = vnni ? gemm_q2_k_vnni : gemm_q2_k;
  slot(t, TensorType::Q3_K).gemm = vnni ? gemm_q3_k_vnni : gemm_q3_k;
  if (vnni) {
    slot(t, TensorType::Q8_0).gemm = gemm_q8_0;
    slot(t, TensorType::Q4_0).gemm = gemm_q4_0;
    slot(t, TensorType::Q5_0).gemm = gemm_q5_0;
    slot(t, TensorType::IQ4_NL).gemm = gemm_iq4_nl;
  }
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_X86
