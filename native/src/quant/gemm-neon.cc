// NEON (arm64) blocked matrix-product kernels (gemm.h describes tiles and panels) for the common weight
// types; the others use vec_dot per row and token.
//   F32, F16, BF16      4 rows × 4 tokens of 4-wide FMA accumulators, 8 elements per step.
//   Q8_0, Q4_0, Q5_0    PanelQ8 against Q8_0, 4 × 4: SDOT (or vmull + vpadal without dotprod) per 16
//                       bytes, then one FMA per block with the two scales' product.
//   Q2_K .. Q6_K        PanelK against Q8_K, 4 × 4 integer accumulators per super-block: SDOT per 16
//                       elements times that group's scale (vmla by scalar), scaled once per super-block.
// The panels come from the portable packers (gemm-pack.cc). Integer sums per block are exact and equal
// to vec_dot's; only the float scaling and accumulation order differ.
#include "quant/kernels.h"

#if FOLIO_QUANT_NEON

#include <arm_neon.h>

#include "quant/neon-common.h"

#include <cstring>

#include "core/fp16.h"
#include "quant/gemm.h"

namespace folio::quant {
namespace neongemm {
namespace {
using neon_common::dot16_plain;
using neon_common::dot16_sdot;

// ---------------------------------------------------------------------------------------------------
// F32 / F16 / BF16

struct LoadF32 {
  static void v(const uint8_t* p, int64_t c, float32x4_t& lo, float32x4_t& hi) {
    const float* f = reinterpret_cast<const float*>(p) + c;
    lo = vld1q_f32(f);
    hi = vld1q_f32(f + 4);
  }
  static float s(const uint8_t* p, int64_t c) { return reinterpret_cast<const float*>(p)[c]; }
};
struct LoadF16 {
  static void v(const uint8_t* p, int64_t c, float32x4_t& lo, float32x4_t& hi) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(p) + c));
    lo = vcvt_f32_f16(vget_low_f16(h));
    hi = vcvt_high_f32_f16(h);
  }
  static float s(const uint8_t* p, int64_t c) {
    uint16_t h;
    std::memcpy(&h, p + 2 * c, 2);
    return fp16_to_f32(h);
  }
};
struct LoadBF16 {
  static void v(const uint8_t* p, int64_t c, float32x4_t& lo, float32x4_t& hi) {
    const uint16x8_t h = vld1q_u16(reinterpret_cast<const uint16_t*>(p) + c);
    lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
    hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
  }
  static float s(const uint8_t* p, int64_t c) {
    uint16_t h;
    std::memcpy(&h, p + 2 * c, 2);
    return bf16_to_f32(h);
  }
};

template <typename L>
struct FloatTile {
  template <int RM, int RN>
  struct T {
    static void run(const TileArgs& a) {
      float32x4_t acc[RM][RN];
      for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) acc[i][j] = vdupq_n_f32(0);
      int64_t c = 0;
      for (; c + 8 <= a.k; c += 8) {
        float32x4_t x0[RN], x1[RN];
        for (int j = 0; j < RN; ++j) L::v(a.x + j * a.ldx, c, x0[j], x1[j]);
        for (int i = 0; i < RM; ++i) {
          float32x4_t w0, w1;
          L::v(a.w + i * a.ldw, c, w0, w1);
          for (int j = 0; j < RN; ++j) acc[i][j] = vfmaq_f32(vfmaq_f32(acc[i][j], w0, x0[j]), w1, x1[j]);
        }
      }
      for (int i = 0; i < RM; ++i) {
        for (int j = 0; j < RN; ++j) {
          float s = vaddvq_f32(acc[i][j]);
          for (int64_t t = c; t < a.k; ++t) s += L::s(a.w + i * a.ldw, t) * L::s(a.x + j * a.ldx, t);
          a.y[j * a.ldy + i] = s;
        }
      }
    }
  };
};

FOLIO_FLOAT_GEMMS(4, 4)
// ---------------------------------------------------------------------------------------------------
// Integer dots of 16 signed bytes into 4 int32 lanes.

// Q8_0, Q4_0, Q5_0 (PanelQ8) against Q8_0.
#define FOLIO_TILE_Q8_BODY(DOT)                                                     \
  const int64_t nb = a.k / QK;                                                      \
  float32x4_t acc[RM][RN];                                                          \
  for (int i = 0; i < RM; ++i)                                                      \
    for (int j = 0; j < RN; ++j) acc[i][j] = vdupq_n_f32(0);                        \
  for (int64_t b = 0; b < nb; ++b) {                                                \
    int8x16_t x0[RN], x1[RN];                                                       \
    float xd[RN];                                                                   \
    for (int j = 0; j < RN; ++j) {                                                  \
      const BlockQ8_0& xb = reinterpret_cast<const BlockQ8_0*>(a.x + j * a.ldx)[b]; \
      x0[j] = vld1q_s8(xb.qs);                                                      \
      x1[j] = vld1q_s8(xb.qs + 16);                                                 \
      xd[j] = a.xs[j * a.ldxs + b];                                                 \
    }                                                                               \
    for (int i = 0; i < RM; ++i) {                                                  \
      const PanelQ8& wb = reinterpret_cast<const PanelQ8*>(a.w + i * a.ldw)[b];     \
      const int8x16_t w0 = vld1q_s8(wb.qs), w1 = vld1q_s8(wb.qs + 16);              \
      for (int j = 0; j < RN; ++j) {                                                \
        const int32x4_t s = DOT(DOT(vdupq_n_s32(0), w0, x0[j]), w1, x1[j]);         \
        acc[i][j] = vfmaq_n_f32(acc[i][j], vcvtq_f32_s32(s), wb.d * xd[j]);         \
      }                                                                             \
    }                                                                               \
  }                                                                                 \
  for (int i = 0; i < RM; ++i)                                                      \
    for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = vaddvq_f32(acc[i][j]);

template <int RM, int RN>
struct TileQ8 {
  static void run(const TileArgs& a) { FOLIO_TILE_Q8_BODY(dot16_plain) }
};
template <int RM, int RN>
struct TileQ8Sdot {
  FOLIO_DOTPROD static void run(const TileArgs& a) { FOLIO_TILE_Q8_BODY(dot16_sdot) }
};
#undef FOLIO_TILE_Q8_BODY
const TileTable<TileQ8, 4, 4> kTilesQ8;
const TileTable<TileQ8Sdot, 4, 4> kTilesQ8Sdot;

#define Q8_PANEL size_t(k / QK) * sizeof(PanelQ8)
FOLIO_GEMM(gemm_q8_0, kTilesQ8, pack_q8_0_portable, Q8_PANEL, prep_q8_0_portable, k / QK)
FOLIO_GEMM(gemm_q4_0, kTilesQ8, pack_q4_0_portable, Q8_PANEL, prep_q8_0_portable, k / QK)
FOLIO_GEMM(gemm_q5_0, kTilesQ8, pack_q5_0_portable, Q8_PANEL, prep_q8_0_portable, k / QK)
FOLIO_GEMM(gemm_iq4_nl, kTilesQ8, pack_iq4_nl_portable, Q8_PANEL, prep_q8_0_portable, k / QK)
FOLIO_GEMM(gemm_iq4_nl_sdot, kTilesQ8Sdot, pack_iq4_nl_portable, Q8_PANEL, prep_q8_0_portable, k / QK)
FOLIO_GEMM(gemm_q8_0_sdot, kTilesQ8Sdot, pack_q8_0_portable, Q8_PANEL, prep_q8_0_portable, k / QK)
FOLIO_GEMM(gemm_q4_0_sdot, kTilesQ8Sdot, pack_q4_0_portable, Q8_PANEL, prep_q8_0_portable, k / QK)
FOLIO_GEMM(gemm_q5_0_sdot, kTilesQ8Sdot, pack_q5_0_portable, Q8_PANEL, prep_q8_0_portable, k / QK)
#undef Q8_PANEL

// Q4_K, Q5_K, Q6_K (PanelK) against Q8_K. The panel's quants are 0..63, so signed bytes too; the scale of
// elements 0-15 of sub-block s is sc[s][0], of 16-31 sc[s][8].
#define FOLIO_TILE_K_BODY(DOT)                                                                    \
  const int64_t nb = a.k / QK_K;                                                                  \
  float32x4_t acc[RM][RN];                                                                        \
  for (int i = 0; i < RM; ++i)                                                                    \
    for (int j = 0; j < RN; ++j) acc[i][j] = vdupq_n_f32(0);                                      \
  for (int64_t b = 0; b < nb; ++b) {                                                              \
    const BlockQ8_K* xb[RN];                                                                      \
    for (int j = 0; j < RN; ++j) xb[j] = reinterpret_cast<const BlockQ8_K*>(a.x + j * a.ldx) + b; \
    const PanelK* wb[RM];                                                                         \
    for (int i = 0; i < RM; ++i) wb[i] = reinterpret_cast<const PanelK*>(a.w + i * a.ldw) + b;    \
    int32x4_t isum[RM][RN];                                                                       \
    for (int i = 0; i < RM; ++i)                                                                  \
      for (int j = 0; j < RN; ++j) isum[i][j] = vdupq_n_s32(0);                                   \
    for (int s = 0; s < QK_K / 32; ++s) {                                                         \
      int8x16_t x0[RN], x1[RN];                                                                   \
      for (int j = 0; j < RN; ++j) {                                                              \
        x0[j] = vld1q_s8(xb[j]->qs + 32 * s);                                                     \
        x1[j] = vld1q_s8(xb[j]->qs + 32 * s + 16);                                                \
      }                                                                                           \
      for (int i = 0; i < RM; ++i) {                                                              \
        const int8x16_t q0 = vreinterpretq_s8_u8(vld1q_u8(wb[i]->q + 32 * s));                    \
        const int8x16_t q1 = vreinterpretq_s8_u8(vld1q_u8(wb[i]->q + 32 * s + 16));               \
        const int32_t s0 = wb[i]->sc[s][0], s1 = wb[i]->sc[s][8];                                 \
        for (int j = 0; j < RN; ++j) {                                                            \
          isum[i][j] = vmlaq_n_s32(isum[i][j], DOT(vdupq_n_s32(0), q0, x0[j]), s0);               \
          isum[i][j] = vmlaq_n_s32(isum[i][j], DOT(vdupq_n_s32(0), q1, x1[j]), s1);               \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
    for (int j = 0; j < RN; ++j) {                                                                \
      const int16x8_t bs0 = vld1q_s16(xb[j]->bsums), bs1 = vld1q_s16(xb[j]->bsums + 8);           \
      const float dy = xb[j]->d;                                                                  \
      for (int i = 0; i < RM; ++i) {                                                              \
        const int16x8_t o0 = vld1q_s16(wb[i]->off), o1 = vld1q_s16(wb[i]->off + 8);               \
        int32x4_t m = vmull_s16(vget_low_s16(bs0), vget_low_s16(o0));                             \
        m = vmlal_high_s16(m, bs0, o0);                                                           \
        m = vmlal_s16(m, vget_low_s16(bs1), vget_low_s16(o1));                                    \
        m = vmlal_high_s16(m, bs1, o1);                                                           \
        acc[i][j] = vfmaq_n_f32(acc[i][j], vcvtq_f32_s32(isum[i][j]), wb[i]->d * dy);             \
        acc[i][j] = vfmsq_n_f32(acc[i][j], vcvtq_f32_s32(m), wb[i]->dmin * dy);                   \
      }                                                                                           \
    }                                                                                             \
  }                                                                                               \
  for (int i = 0; i < RM; ++i)                                                                    \
    for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = vaddvq_f32(acc[i][j]);

template <int RM, int RN>
struct TileK {
  static void run(const TileArgs& a) { FOLIO_TILE_K_BODY(dot16_plain) }
};
template <int RM, int RN>
struct TileKSdot {
  FOLIO_DOTPROD static void run(const TileArgs& a) { FOLIO_TILE_K_BODY(dot16_sdot) }
};
#undef FOLIO_TILE_K_BODY
const TileTable<TileK, 4, 4> kTilesK;
const TileTable<TileKSdot, 4, 4> kTilesKSdot;

#define K_PANEL size_t(k / QK_K) * sizeof(PanelK)
FOLIO_GEMM(gemm_q4_k, kTilesK, pack_q4_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q5_k, kTilesK, pack_q5_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q6_k, kTilesK, pack_q6_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q4_k_sdot, kTilesKSdot, pack_q4_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q5_k_sdot, kTilesKSdot, pack_q5_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q6_k_sdot, kTilesKSdot, pack_q6_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q2_k, kTilesK, pack_q2_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q3_k, kTilesK, pack_q3_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q2_k_sdot, kTilesKSdot, pack_q2_k_portable, K_PANEL, nullptr, 0)
FOLIO_GEMM(gemm_q3_k_sdot, kTilesKSdot, pack_q3_k_portable, K_PANEL, nullptr, 0)
#undef K_PANEL
#undef FOLIO_GEMM

}  // namespace
}  // namespace neongemm

void add_neon_gemm(KernelTable& t, bool dotprod) {
  using namespace neongemm;
  slot(t, TensorType::F32).gemm = gemm_f32;
  slot(t, TensorType::F16).gemm = gemm_f16;
  slot(t, TensorType::BF16).gemm = gemm_bf16;
  slot(t, TensorType::Q8_0).gemm = dotprod ? gemm_q8_0_sdot : gemm_q8_0;
  slot(t, TensorType::Q4_0).gemm = dotprod ? gemm_q4_0_sdot : gemm_q4_0;
  slot(t, TensorType::Q5_0).gemm = dotprod ? gemm_q5_0_sdot : gemm_q5_0;
  slot(t, TensorType::IQ4_NL).gemm = dotprod ? gemm_iq4_nl_sdot : gemm_iq4_nl;
  slot(t, TensorType::Q4_K).gemm = dotprod ? gemm_q4_k_sdot : gemm_q4_k;
  slot(t, TensorType::Q5_K).gemm = dotprod ? gemm_q5_k_sdot : gemm_q5_k;
  slot(t, TensorType::Q6_K).gemm = dotprod ? gemm_q6_k_sdot : gemm_q6_k;
  slot(t, TensorType::Q2_K).gemm = dotprod ? gemm_q2_k_sdot : gemm_q2_k;
  slot(t, TensorType::Q3_K).gemm = dotprod ? gemm_q3_k_sdot : gemm_q3_k;
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_NEON
