// AVX2 (+FMA, F16C) blocked matrix-product kernels for every weight type (gemm.h describes the tiles and
// panels), and the Q4_K/Q5_K matrix-vector kernel. The integer work per block is the vec_dot kernels'
// (quant-avx2*.cc), so block sums are the same exact integers; only the float scaling and accumulation
// order differ.
//   F32, F16, BF16    4 rows × 3 tokens of 8-wide FMA accumulators; F16/BF16 converted on load.
//   Q8_0, Q4_0, Q5_0  PanelQ8 (float scale, int8 quants), 4 × 2: per block and pair vpsignb, vpmaddubsw,
//                     vpmaddwd, then one FMA with the product of the two scales.
//   Q4_1, Q5_1        PanelU8_1, 4 × 2: unsigned quants straight into vpmaddubsw, the min times the
//                     activation block's sum added per block.
//   Q4_K, Q5_K, Q6_K  PanelK, 3 × 3 integer accumulators per super-block (vpmaddubsw, vpmaddwd with the
//                     panel's scale vector), scaled into float accumulators once per super-block.
#include "quant/kernels.h"

#if FOLIO_QUANT_X86

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "quant/avx2-common.h"
#include "quant/blocks.h"
#include "quant/gemm.h"

namespace folio::quant {
namespace avx2 {
namespace {

// ---------------------------------------------------------------------------------------------------
// F32 / F16 / BF16

struct LoadF32 {
  FOLIO_AVX2 static __m256 v(const uint8_t* p, int64_t c) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p) + c);
  }
  FOLIO_AVX2 static float s(const uint8_t* p, int64_t c) { return reinterpret_cast<const float*>(p)[c]; }
};
struct LoadF16 {
  FOLIO_AVX2 static __m256 v(const uint8_t* p, int64_t c) {
    return _mm256_cvtph_ps(load128(reinterpret_cast<const uint16_t*>(p) + c));
  }
  FOLIO_AVX2 static float s(const uint8_t* p, int64_t c) {
    uint16_t h;
    std::memcpy(&h, p + 2 * c, 2);
    return h2f(h);
  }
};
struct LoadBF16 {
  FOLIO_AVX2 static __m256 v(const uint8_t* p, int64_t c) {
    const __m256i u = _mm256_cvtepu16_epi32(load128(reinterpret_cast<const uint16_t*>(p) + c));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  }
  FOLIO_AVX2 static float s(const uint8_t* p, int64_t c) {
    uint16_t h;
    std::memcpy(&h, p + 2 * c, 2);
    return bf16_to_f32(h);
  }
};

template <typename L>
struct FloatTile {
  template <int RM, int RN>
  struct T {
    FOLIO_AVX2 static void run(const TileArgs& a) {
      __m256 acc[RM][RN];
      for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
      int64_t c = 0;
      for (; c + 8 <= a.k; c += 8) {
        __m256 xv[RN];
        for (int j = 0; j < RN; ++j) xv[j] = L::v(a.x + j * a.ldx, c);
        for (int i = 0; i < RM; ++i) {
          const __m256 wv = L::v(a.w + i * a.ldw, c);
          for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_fmadd_ps(wv, xv[j], acc[i][j]);
        }
      }
      for (int i = 0; i < RM; ++i) {
        for (int j = 0; j < RN; ++j) {
          float s = hsum(acc[i][j]);
          for (int64_t t = c; t < a.k; ++t) s += L::s(a.w + i * a.ldw, t) * L::s(a.x + j * a.ldx, t);
          a.y[j * a.ldy + i] = s;
        }
      }
    }
  };
};

FOLIO_FLOAT_GEMMS(4, 3)

// ---------------------------------------------------------------------------------------------------
// Q8_0, Q4_0, Q5_0 (unpacked to PanelQ8) against Q8_0 activations.

template <int RM, int RN>
struct TileQ8 {
  FOLIO_AVX2 static void run(const TileArgs& a) {
    const int64_t nb = a.k / QK;
    __m256 acc[RM][RN];
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
      __m256i xq[RN];
      __m256 xd[RN];
      for (int j = 0; j < RN; ++j) {
        xq[j] = load256(reinterpret_cast<const BlockQ8_0*>(a.x + j * a.ldx)[b].qs);
        xd[j] = _mm256_broadcast_ss(a.xs + j * a.ldxs + b);
      }
      for (int i = 0; i < RM; ++i) {
        const PanelQ8& wb = reinterpret_cast<const PanelQ8*>(a.w + i * a.ldw)[b];
        const __m256i wq = load256(wb.qs);
        const __m256i wa = _mm256_sign_epi8(wq, wq);
        const __m256 wd = _mm256_broadcast_ss(&wb.d);
        for (int j = 0; j < RN; ++j) {
          const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(wa, _mm256_sign_epi8(xq[j], wq)), ones);
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(wd, xd[j]), acc[i][j]);
        }
      }
    }
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = hsum(acc[i][j]);
  }
};
const TileTable<TileQ8, 4, 2> kTilesQ8;

FOLIO_AVX2 int64_t prep_q8_0(int64_t k, const uint8_t* x, size_t ldx, int64_t n, float* dst) {
  const int64_t nb = k / QK;
  for (int64_t j = 0; j < n; ++j) {
    const BlockQ8_0* xb = reinterpret_cast<const BlockQ8_0*>(x + j * ldx);
    for (int64_t b = 0; b < nb; ++b) dst[j * nb + b] = h2f(xb[b].d);
  }
  return nb;
}

// Panel quants as int8, or biased by +128 to unsigned for the AVX-VNNI kernel.
template <bool Biased>
FOLIO_AVX2 void store_q8(int8_t* dst, __m256i q) {
  if constexpr (Biased) q = _mm256_xor_si256(q, _mm256_set1_epi8(char(0x80)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), q);
}

template <bool Biased>
FOLIO_AVX2 size_t pack_q8_0(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK;
  for (int i = 0; i < rm; ++i) {
    const BlockQ8_0* src = reinterpret_cast<const BlockQ8_0*>(w + i * ldw);
    PanelQ8* out = reinterpret_cast<PanelQ8*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      out[b].d = h2f(src[b].d);
      store_q8<Biased>(out[b].qs, load256(src[b].qs));
    }
  }
  return size_t(nb) * sizeof(PanelQ8);
}

template <bool Biased>
FOLIO_AVX2 size_t pack_q4_0(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK;
  for (int i = 0; i < rm; ++i) {
    const BlockQ4_0* src = reinterpret_cast<const BlockQ4_0*>(w + i * ldw);
    PanelQ8* out = reinterpret_cast<PanelQ8*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      out[b].d = h2f(src[b].d);
      store_q8<Biased>(out[b].qs, _mm256_sub_epi8(nibbles16(src[b].qs), _mm256_set1_epi8(8)));
    }
  }
  return size_t(nb) * sizeof(PanelQ8);
}

// IQ4_NL: the code book values of the indices (vpshufb on the 16-entry table in both lanes).
template <bool Biased>
FOLIO_AVX2 size_t pack_iq4_nl(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK;
  const __m256i table = _mm256_broadcastsi128_si256(load128(kIq4nlValues));
  for (int i = 0; i < rm; ++i) {
    const BlockIQ4_NL* src = reinterpret_cast<const BlockIQ4_NL*>(w + i * ldw);
    PanelQ8* out = reinterpret_cast<PanelQ8*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      out[b].d = h2f(src[b].d);
      store_q8<Biased>(out[b].qs, _mm256_shuffle_epi8(table, nibbles16(src[b].qs)));
    }
  }
  return size_t(nb) * sizeof(PanelQ8);
}

FOLIO_AVX2 __m256i q5_values(const uint8_t* qs, const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  return _mm256_or_si256(nibbles16(qs), _mm256_and_si256(bits_to_bytes(bits), _mm256_set1_epi8(16)));
}

template <bool Biased>
FOLIO_AVX2 size_t pack_q5_0(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK;
  for (int i = 0; i < rm; ++i) {
    const BlockQ5_0* src = reinterpret_cast<const BlockQ5_0*>(w + i * ldw);
    PanelQ8* out = reinterpret_cast<PanelQ8*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      out[b].d = h2f(src[b].d);
      store_q8<Biased>(out[b].qs, _mm256_sub_epi8(q5_values(src[b].qs, src[b].qh), _mm256_set1_epi8(16)));
    }
  }
  return size_t(nb) * sizeof(PanelQ8);
}

// With AVX-VNNI (vpdpbusd on 256 bits, e.g. Intel since Alder Lake): the panel holds w + 128 (unsigned),
// and vpdpbusd sums (w + 128)·x exactly in int32 starting from −128·Σx, computed from the same x.
template <int RM, int RN>
struct TileQ8Vnni {
  FOLIO_AVX_VNNI static void run(const TileArgs& a) {
    const int64_t nb = a.k / QK;
    __m256 acc[RM][RN];
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
    const __m256i bias = _mm256_set1_epi8(char(0x80));
    for (int64_t b = 0; b < nb; ++b) {
      __m256i xq[RN], neg[RN];
      for (int j = 0; j < RN; ++j) {
        xq[j] = load256(reinterpret_cast<const BlockQ8_0*>(a.x + j * a.ldx)[b].qs);
        neg[j] = _mm256_sub_epi32(_mm256_setzero_si256(), FOLIO_DPBUSD256(_mm256_setzero_si256(), bias, xq[j]));
      }
      for (int i = 0; i < RM; ++i) {
        const PanelQ8& wb = reinterpret_cast<const PanelQ8*>(a.w + i * a.ldw)[b];
        const __m256i wq = load256(wb.qs);
        const __m256 wd = _mm256_broadcast_ss(&wb.d);
        for (int j = 0; j < RN; ++j) {
          const __m256i s = FOLIO_DPBUSD256(neg[j], wq, xq[j]);
          const __m256 scale = _mm256_mul_ps(wd, _mm256_broadcast_ss(a.xs + j * a.ldxs + b));
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, acc[i][j]);
        }
      }
    }
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = hsum(acc[i][j]);
  }
};
const TileTable<TileQ8Vnni, 4, 2> kTilesQ8Vnni;

#define Q8_PANEL size_t(k / QK) * sizeof(PanelQ8)
FOLIO_GEMM(gemm_q8_0, kTilesQ8, pack_q8_0<false>, Q8_PANEL, prep_q8_0, k / QK)
FOLIO_GEMM(gemm_q4_0, kTilesQ8, pack_q4_0<false>, Q8_PANEL, prep_q8_0, k / QK)
FOLIO_GEMM(gemm_q5_0, kTilesQ8, pack_q5_0<false>, Q8_PANEL, prep_q8_0, k / QK)
FOLIO_GEMM(gemm_q8_0_vnni, kTilesQ8Vnni, pack_q8_0<true>, Q8_PANEL, prep_q8_0, k / QK)
FOLIO_GEMM(gemm_q4_0_vnni, kTilesQ8Vnni, pack_q4_0<true>, Q8_PANEL, prep_q8_0, k / QK)
FOLIO_GEMM(gemm_q5_0_vnni, kTilesQ8Vnni, pack_q5_0<true>, Q8_PANEL, prep_q8_0, k / QK)
FOLIO_GEMM(gemm_iq4_nl, kTilesQ8, pack_iq4_nl<false>, Q8_PANEL, prep_q8_0, k / QK)
FOLIO_GEMM(gemm_iq4_nl_vnni, kTilesQ8Vnni, pack_iq4_nl<true>, Q8_PANEL, prep_q8_0, k / QK)
#undef Q8_PANEL

// ---------------------------------------------------------------------------------------------------
// Q4_1 / Q5_1 (unpacked to PanelU8_1) against Q8_1.

template <int RM, int RN>
struct TileU8_1 {
  FOLIO_AVX2 static void run(const TileArgs& a) {
    const int64_t nb = a.k / QK;
    __m256 acc[RM][RN];
    __m128 ms[RM][RN];
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps(), ms[i][j] = _mm_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; ++b) {
      __m256i xq[RN];
      __m256 xd[RN];
      __m128 xs[RN];
      for (int j = 0; j < RN; ++j) {
        xq[j] = load256(reinterpret_cast<const BlockQ8_1*>(a.x + j * a.ldx)[b].qs);
        xd[j] = _mm256_broadcast_ss(a.xs + j * a.ldxs + 2 * b);
        xs[j] = _mm_load_ss(a.xs + j * a.ldxs + 2 * b + 1);
      }
      for (int i = 0; i < RM; ++i) {
        const PanelU8_1& wb = reinterpret_cast<const PanelU8_1*>(a.w + i * a.ldw)[b];
        const __m256i wq = load256(wb.qs);
        const __m256 wd = _mm256_broadcast_ss(&wb.d);
        const __m128 wm = _mm_load_ss(&wb.m);
        for (int j = 0; j < RN; ++j) {
          const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(wq, xq[j]), ones);
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(wd, xd[j]), acc[i][j]);
          ms[i][j] = _mm_fmadd_ss(wm, xs[j], ms[i][j]);
        }
      }
    }
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = hsum(acc[i][j]) + _mm_cvtss_f32(ms[i][j]);
  }
};
const TileTable<TileU8_1, 4, 2> kTilesU8_1;

// (d, s) of every Q8_1 block.
FOLIO_AVX2 int64_t prep_q8_1(int64_t k, const uint8_t* x, size_t ldx, int64_t n, float* dst) {
  const int64_t nb = k / QK;
  for (int64_t j = 0; j < n; ++j) {
    const BlockQ8_1* xb = reinterpret_cast<const BlockQ8_1*>(x + j * ldx);
    for (int64_t b = 0; b < nb; ++b) dst[j * 2 * nb + 2 * b] = h2f(xb[b].d), dst[j * 2 * nb + 2 * b + 1] = h2f(xb[b].s);
  }
  return 2 * nb;
}

FOLIO_AVX2 size_t pack_q4_1(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK;
  for (int i = 0; i < rm; ++i) {
    const BlockQ4_1* src = reinterpret_cast<const BlockQ4_1*>(w + i * ldw);
    PanelU8_1* out = reinterpret_cast<PanelU8_1*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      out[b].d = h2f(src[b].d);
      out[b].m = h2f(src[b].m);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), nibbles16(src[b].qs));
    }
  }
  return size_t(nb) * sizeof(PanelU8_1);
}

FOLIO_AVX2 size_t pack_q5_1(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK;
  for (int i = 0; i < rm; ++i) {
    const BlockQ5_1* src = reinterpret_cast<const BlockQ5_1*>(w + i * ldw);
    PanelU8_1* out = reinterpret_cast<PanelU8_1*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      out[b].d = h2f(src[b].d);
      out[b].m = h2f(src[b].m);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), q5_values(src[b].qs, src[b].qh));
    }
  }
  return size_t(nb) * sizeof(PanelU8_1);
}

FOLIO_GEMM(gemm_q4_1, kTilesU8_1, pack_q4_1, size_t(k / QK) * sizeof(PanelU8_1), prep_q8_1, 2 * (k / QK))
FOLIO_GEMM(gemm_q5_1, kTilesU8_1, pack_q5_1, size_t(k / QK) * sizeof(PanelU8_1), prep_q8_1, 2 * (k / QK))

// ---------------------------------------------------------------------------------------------------
// Q4_K, Q5_K, Q6_K (unpacked to PanelK) against Q8_K.

// The K tile's body, with DOT(acc, p, sc) adding the pairs p (vpmaddubsw) times the scales sc.
#define FOLIO_TILE_K_BODY(DOT)                                                                                 \
  const int64_t nb = a.k / QK_K;                                                                               \
  __m256 acc[RM][RN];                                                                                          \
  for (int i = 0; i < RM; ++i)                                                                                 \
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();                                              \
  for (int64_t b = 0; b < nb; ++b) {                                                                           \
    const BlockQ8_K* xb[RN];                                                                                   \
    for (int j = 0; j < RN; ++j) xb[j] = reinterpret_cast<const BlockQ8_K*>(a.x + j * a.ldx) + b;              \
    const PanelK* wb[RM];                                                                                      \
    for (int i = 0; i < RM; ++i) wb[i] = reinterpret_cast<const PanelK*>(a.w + i * a.ldw) + b;                 \
    __m256i isum[RM][RN];                                                                                      \
    for (int i = 0; i < RM; ++i)                                                                               \
      for (int j = 0; j < RN; ++j) isum[i][j] = _mm256_setzero_si256();                                        \
    for (int s = 0; s < QK_K / 32; ++s) {                                                                      \
      __m256i xq[RN];                                                                                          \
      for (int j = 0; j < RN; ++j) xq[j] = load256(xb[j]->qs + 32 * s);                                        \
      for (int i = 0; i < RM; ++i) {                                                                           \
        const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(wb[i]->q + 32 * s));              \
        const __m256i sc = _mm256_load_si256(reinterpret_cast<const __m256i*>(wb[i]->sc[s]));                  \
        for (int j = 0; j < RN; ++j) { isum[i][j] = DOT(isum[i][j], _mm256_maddubs_epi16(q, xq[j]), sc); }     \
      }                                                                                                        \
    }                                                                                                          \
    for (int j = 0; j < RN; ++j) {                                                                             \
      const __m256i bs = load256(xb[j]->bsums);                                                                \
      const float dy = xb[j]->d;                                                                               \
      for (int i = 0; i < RM; ++i) {                                                                           \
        const __m256i off = _mm256_load_si256(reinterpret_cast<const __m256i*>(wb[i]->off));                   \
        const __m256i msum = _mm256_madd_epi16(bs, off);                                                       \
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][j]), _mm256_set1_ps(wb[i]->d * dy), acc[i][j]); \
        acc[i][j] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(wb[i]->dmin * dy), acc[i][j]);   \
      }                                                                                                        \
    }                                                                                                          \
  }                                                                                                            \
  for (int i = 0; i < RM; ++i)                                                                                 \
    for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = hsum(acc[i][j]);

FOLIO_AVX2 __m256i dot_madd(__m256i acc, __m256i p, __m256i sc) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
}
FOLIO_AVX_VNNI __m256i dot_vnni(__m256i acc, __m256i p, __m256i sc) { return FOLIO_DPWSSD256(acc, p, sc); }

template <int RM, int RN>
struct TileK {
  FOLIO_AVX2 static void run(const TileArgs& a) { FOLIO_TILE_K_BODY(dot_madd) }
};
template <int RM, int RN>
struct TileKVnni {
  FOLIO_AVX_VNNI static void run(const TileArgs& a) { FOLIO_TILE_K_BODY(dot_vnni) }
};
#undef FOLIO_TILE_K_BODY
const TileTable<TileKVnni, 3, 3> kTilesKVnni;
const TileTable<TileK, 3, 3> kTilesK;

// Scales and mins of a Q4_K/Q5_K super-block into a panel.
FOLIO_AVX2 void pack_k4_scales(const uint8_t* scales, uint16_t d, uint16_t dmin, PanelK& p) {
  uint8_t sc[8], mn[8];
  unpack_scales_k4(scales, sc, mn);
  for (int s = 0; s < 8; ++s) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(p.sc[s]), _mm256_set1_epi16(sc[s]));
    p.off[2 * s] = p.off[2 * s + 1] = mn[s];
  }
  p.d = h2f(d);
  p.dmin = h2f(dmin);
}

FOLIO_AVX2 size_t pack_q4_k(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK_K;
  const __m256i m4 = _mm256_set1_epi8(15);
  for (int i = 0; i < rm; ++i) {
    const BlockQ4_K* src = reinterpret_cast<const BlockQ4_K*>(w + i * ldw);
    PanelK* out = reinterpret_cast<PanelK*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      for (int c = 0; c < 4; ++c) {
        const __m256i v = load256(src[b].qs + 32 * c);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out[b].q + 64 * c), _mm256_and_si256(v, m4));
        _mm256_store_si256(reinterpret_cast<__m256i*>(out[b].q + 64 * c + 32),
                           _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
      }
      pack_k4_scales(src[b].scales, src[b].d, src[b].dmin, out[b]);
    }
  }
  return size_t(nb) * sizeof(PanelK);
}

FOLIO_AVX2 size_t pack_q5_k(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK_K;
  const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
  for (int i = 0; i < rm; ++i) {
    const BlockQ5_K* src = reinterpret_cast<const BlockQ5_K*>(w + i * ldw);
    PanelK* out = reinterpret_cast<PanelK*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      __m256i hb = load256(src[b].qh);
      for (int c = 0; c < 4; ++c) {
        // bit 2c of qh[l] is bit 4 of element 64c + l, bit 2c + 1 that of element 64c + 32 + l
        const __m256i v = load256(src[b].qs + 32 * c);
        const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, one), 4);
        const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), one), 4);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out[b].q + 64 * c), _mm256_or_si256(_mm256_and_si256(v, m4), h0));
        _mm256_store_si256(reinterpret_cast<__m256i*>(out[b].q + 64 * c + 32),
                           _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), h1));
        hb = _mm256_srli_epi16(hb, 2);
      }
      pack_k4_scales(src[b].scales, src[b].d, src[b].dmin, out[b]);
    }
  }
  return size_t(nb) * sizeof(PanelK);
}

FOLIO_AVX2 size_t pack_q6_k(int64_t k, const uint8_t* w, size_t ldw, int rm, uint8_t* dst) {
  const int64_t nb = k / QK_K;
  const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
  for (int i = 0; i < rm; ++i) {
    const BlockQ6_K* src = reinterpret_cast<const BlockQ6_K*>(w + i * ldw);
    PanelK* out = reinterpret_cast<PanelK*>(dst) + i * nb;
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ6_K& q6 = src[b];
      for (int h = 0; h < 2; ++h) {
        // elements 128h + l, +32, +64, +96 (layout in blocks.h)
        const __m256i l0 = load256(q6.ql + 64 * h), l1 = load256(q6.ql + 64 * h + 32), hi = load256(q6.qh + 32 * h);
        uint8_t* q = out[b].q + 128 * h;
        _mm256_store_si256(reinterpret_cast<__m256i*>(q),
                           _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hi, m2), 4)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(q + 32),
                           _mm256_or_si256(_mm256_and_si256(l1, m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hi, 2), m2), 4)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(q + 64),
                           _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hi, 4), m2), 4)));
        _mm256_store_si256(reinterpret_cast<__m256i*>(q + 96),
                           _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hi, 6), m2), 4)));
      }
      for (int s = 0; s < 8; ++s) {
        const __m128i lo = _mm_set1_epi16(q6.scales[2 * s]), hi = _mm_set1_epi16(q6.scales[2 * s + 1]);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out[b].sc[s]), _mm256_set_m128i(hi, lo));
      }
      const __m256i sc16 = _mm256_cvtepi8_epi16(load128(q6.scales));
      _mm256_store_si256(reinterpret_cast<__m256i*>(out[b].off), _mm256_slli_epi16(sc16, 5));
      out[b].d = out[b].dmin = h2f(q6.d);
    }
  }
  return size_t(nb) * sizeof(PanelK);
}

FOLIO_GEMM(gemm_q4_k, kTilesK, pack_q4_k, size_t(k / QK_K) * sizeof(PanelK), nullptr, 0)
FOLIO_GEMM(gemm_q5_k, kTilesK, pack_q5_k, size_t(k / QK_K) * sizeof(PanelK), nullptr, 0)
FOLIO_GEMM(gemm_q6_k, kTilesK, pack_q6_k, size_t(k / QK_K) * sizeof(PanelK), nullptr, 0)
FOLIO_GEMM(gemm_q4_k_vnni, kTilesKVnni, pack_q4_k, size_t(k / QK_K) * sizeof(PanelK), nullptr, 0)
FOLIO_GEMM(gemm_q5_k_vnni, kTilesKVnni, pack_q5_k, size_t(k / QK_K) * sizeof(PanelK), nullptr, 0)
FOLIO_GEMM(gemm_q6_k_vnni, kTilesKVnni, pack_q6_k, size_t(k / QK_K) * sizeof(PanelK), nullptr, 0)
// Q2_K, Q3_K: the same tiles over the portable packers' panels (gemm-pack.cc).
FOLIO_GEMM(gemm_q2_k, kTilesK, pack_q2_k_portable, size_t(k / QK_K) * sizeof(PanelK), nullptr, 0)
FOLIO_GEMM(gemm_q3_k, kTilesK, pack_q3_k_portable, size_t(k / QK_K) * sizeof(PanelK), nullptr, 0)
FOLIO_GEMM(gemm_q2_k_vnni, kTilesKVnni, pack_q2_k_portable, size_t(k / QK_K) * sizeof(PanelK), nullptr, 0)
FOLIO_GEMM(gemm_q3_k_vnni, kTilesKVnni, pack_q3_k_portable, size_t(k / QK_K) * sizeof(PanelK), nullptr, 0)

#undef FOLIO_GEMM

// ---------------------------------------------------------------------------------------------------
// Q4_K / Q5_K matrix-vector product (decode): the weights read in place, each super-block serving up to
// three tokens, scales and mins unpacked in registers (no round trip through memory, whose 4-byte stores
// a 16-byte load could not forward: that stall is most of the difference to vec_dot).

// y[t·ldy] = row · x_t for NT tokens, row nb super-blocks of Q4_K (or Q5_K) at w. Per super-block the
// mins come out of the scale vector with two shuffles, and d and dmin are converted together.
#define FOLIO_GEMV_K4_BODY(DOT)                                                                                      \
  using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;                                                        \
  const Block* blk = reinterpret_cast<const Block*>(w);                                                              \
  __m256 acc[NT], macc[NT];                                                                                          \
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps(), macc[t] = _mm256_setzero_ps();                          \
  const __m256i m4 = _mm256_set1_epi8(15);                                                                           \
  /* with the mins in both lanes: each min twice, mins 0-3 in the low lane and 4-7 in the high one */                \
  const __m256i min_pairs = _mm256_setr_epi8(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 8, 9, 8, 9, 10, 11, 10, \
                                             11, 12, 13, 12, 13, 14, 15, 14, 15);                                    \
  for (int64_t b = 0; b < nb; ++b) {                                                                                 \
    const __m256i sc = k4_scales16(blk[b].scales);                                                                   \
    const __m256i scl = _mm256_permute4x64_epi64(sc, 0x44); /* the 8 scales in both lanes */                         \
    const BlockQ8_K* xb[NT];                                                                                         \
    __m256i isum[NT];                                                                                                \
    for (int t = 0; t < NT; ++t)                                                                                     \
      xb[t] = reinterpret_cast<const BlockQ8_K*>(x + t * ldx) + b, isum[t] = _mm256_setzero_si256();                 \
    __m256i hb;                                                                                                      \
    if constexpr (Q5) hb = load256(reinterpret_cast<const BlockQ5_K&>(blk[b]).qh);                                   \
    for (int c = 0; c < 4; ++c) {                                                                                    \
      const __m256i v = load256(blk[b].qs + 32 * c);                                                                 \
      __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);                      \
      if constexpr (Q5) {                                                                                            \
        const __m256i one = _mm256_set1_epi8(1);                                                                     \
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hb, one), 4));                                   \
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), one), 4));             \
        hb = _mm256_srli_epi16(hb, 2);                                                                               \
      }                                                                                                              \
      const __m256i sa = _mm256_shuffle_epi8(scl, _mm256_set1_epi16(short((4 * c) | ((4 * c + 1) << 8))));           \
      const __m256i sb = _mm256_shuffle_epi8(scl, _mm256_set1_epi16(short((4 * c + 2) | ((4 * c + 3) << 8))));       \
      for (int t = 0; t < NT; ++t) {                                                                                 \
        isum[t] = DOT(isum[t], _mm256_maddubs_epi16(lo, load256(xb[t]->qs + 64 * c)), sa);                           \
        isum[t] = DOT(isum[t], _mm256_maddubs_epi16(hi, load256(xb[t]->qs + 64 * c + 32)), sb);                      \
      }                                                                                                              \
    }                                                                                                                \
    const __m256i mn = _mm256_shuffle_epi8(_mm256_permute4x64_epi64(sc, 0xee), min_pairs);                           \
    int32_t ddm;                                                                                                     \
    std::memcpy(&ddm, &blk[b].d, 4); /* d, dmin: adjacent halves */                                                  \
    const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128(ddm));                                                          \
    for (int t = 0; t < NT; ++t) {                                                                                   \
      const __m256i msum = _mm256_madd_epi16(load256(xb[t]->bsums), mn);                                             \
      const __m128 s = _mm_mul_ps(dd, _mm_set1_ps(xb[t]->d)); /* d·xd, dmin·xd */                                  \
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_broadcastss_ps(s), acc[t]);                       \
      macc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_broadcastss_ps(_mm_movehdup_ps(s)), macc[t]);       \
    }                                                                                                                \
  }                                                                                                                  \
  for (int t = 0; t < NT; ++t) y[t * ldy] = hsum(acc[t]) - hsum(macc[t]);

template <int NT, bool Q5>
FOLIO_AVX2 void gemv_k4_row(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y, int64_t ldy) {
  FOLIO_GEMV_K4_BODY(dot_madd)
}
template <int NT, bool Q5>
FOLIO_AVX_VNNI void gemv_k4_row_vnni(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y,
                                     int64_t ldy) {
  FOLIO_GEMV_K4_BODY(dot_vnni)
}
#undef FOLIO_GEMV_K4_BODY

// One row at a time: with two, the accumulators no longer fit the 16 registers and it runs slower.
template <bool Q5, bool VNNI>
constexpr auto gemv_k4 = VNNI ? gemv_k_quant<gemv_k4_row_vnni<1, Q5>, gemv_k4_row_vnni<2, Q5>, gemv_k4_row_vnni<3, Q5>>
                              : gemv_k_quant<gemv_k4_row<1, Q5>, gemv_k4_row<2, Q5>, gemv_k4_row<3, Q5>>;

}  // namespace
}  // namespace avx2

PackFn avx2_k_packer(TensorType type) {
  using namespace avx2;
  return type == TensorType::Q4_K ? pack_q4_k : type == TensorType::Q5_K ? pack_q5_k : pack_q6_k;
}

void add_avx2_gemm(KernelTable& t, bool avx_vnni) {
  using namespace avx2;
  slot(t, TensorType::F32).gemm = gemm_f32;
  slot(t, TensorType::F16).gemm = gemm_f16;
  slot(t, TensorType::BF16).gemm = gemm_bf16;
  slot(t, TensorType::Q8_0).gemm = avx_vnni ? gemm_q8_0_vnni : gemm_q8_0;
  slot(t, TensorType::Q4_0).gemm = avx_vnni ? gemm_q4_0_vnni : gemm_q4_0;
  slot(t, TensorType::Q5_0).gemm = avx_vnni ? gemm_q5_0_vnni : gemm_q5_0;
  slot(t, TensorType::IQ4_NL).gemm = avx_vnni ? gemm_iq4_nl_vnni : gemm_iq4_nl;
  add_avx2_iq4_gemm(t);
  slot(t, TensorType::Q4_1).gemm = gemm_q4_1;
  slot(t, TensorType::Q5_1).gemm = gemm_q5_1;
  slot(t, TensorType::Q4_K).gemm = avx_vnni ? gemm_q4_k_vnni : gemm_q4_k;
  slot(t, TensorType::Q5_K).gemm = avx_vnni ? gemm_q5_k_vnni : gemm_q5_k;
  slot(t, TensorType::Q4_K).gemv = avx_vnni ? gemv_k4<false, true> : gemv_k4<false, false>;
  slot(t, TensorType::Q5_K).gemv = avx_vnni ? gemv_k4<true, true> : gemv_k4<true, false>;
  slot(t, TensorType::Q6_K).gemm = avx_vnni ? gemm_q6_k_vnni : gemm_q6_k;
  slot(t, TensorType::Q2_K).gemm = avx_vnni ? gemm_q2_k_vnni : gemm_q2_k;
  slot(t, TensorType::Q3_K).gemm = avx_vnni ? gemm_q3_k_vnni : gemm_q3_k;
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_X86
