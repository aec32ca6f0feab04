// NEON (arm64) dot products of Q2_K, Q3_K, IQ4_XS with Q8_K and IQ4_NL with Q8_0, with the baseline
// widening multiply-accumulate and with SDOT (dotprod). Signed x signed byte dots: Q3_K's quants (-4..3)
// and the IQ4 code book values (-127..113, one table lookup per 16 indices) go in as they are. Each group's
// integer sum is exact; the float scaling follows the scalar reference (quant-scalar.cc).
//
// Tested under qemu on x86 (no arm64 CI): docs/neon-testing.md.
#include "quant/kernels.h"

#if FOLIO_QUANT_NEON

#include <arm_neon.h>

#include "quant/neon-common.h"

#include <cstring>

#include "quant/blocks.h"

namespace folio::quant {
namespace neon {
namespace {
using neon_common::dot16_plain;
using neon_common::dot16_sdot;
using neon_common::h2f;

// Bits 2j, 2j+1 of 16 bytes (Q2_K/Q3_K's qs, blocks.h), as bytes 0..3.
inline uint8x16_t two_bits(uint8x16_t q, int j) {
  return vandq_u8(vshlq_u8(q, vdupq_n_s8(int8_t(-2 * j))), vdupq_n_u8(3));
}

// The 16 signed Q3_K quants of elements 128h + 32j + 16t + (0..15): low bits + 4 * high bit - 4.
inline int8x16_t q3_k_values(const BlockQ3_K& b, int h, int j, int t) {
  const uint8x16_t lo = two_bits(vld1q_u8(b.qs + 32 * h + 16 * t), j);
  const uint8x16_t hb = vandq_u8(vshlq_u8(vld1q_u8(b.hmask + 16 * t), vdupq_n_s8(int8_t(-(4 * h + j)))), vdupq_n_u8(1));
  return vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(hb, 2))), vdupq_n_s8(4));
}

// The code book values of 16 bytes' low (hi = false) or high nibbles.
inline int8x16_t iq4_values(uint8x16_t q, bool hi) {
  const int8x16_t table = vld1q_s8(kIq4nlValues);
  return vqtbl1q_s8(table, hi ? vshrq_n_u8(q, 4) : vandq_u8(q, vdupq_n_u8(15)));
}

#define FOLIO_NEON_LOWBIT_DOTS(SUFFIX, ATTR, DOT16)                                                                   \
  ATTR float vec_dot_q2_k_##SUFFIX(int64_t n, const void* w, const void* x) {                                         \
    const BlockQ2_K* a = static_cast<const BlockQ2_K*>(w);                                                            \
    const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);                                                            \
    float sum = 0;                                                                                                    \
    for (int64_t ib = 0; ib < n / QK_K; ++ib) {                                                                       \
      const uint8x16_t sc = vld1q_u8(a[ib].scales);                                                                   \
      /* Σ_g m_g bsums[g] */                                                                                         \
      const int16x8_t m0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(vshrq_n_u8(sc, 4))));                           \
      const int16x8_t m1 = vreinterpretq_s16_u16(vmovl_high_u8(vshrq_n_u8(sc, 4)));                                   \
      int32x4_t ms = vmull_s16(vget_low_s16(m0), vld1_s16(b[ib].bsums));                                              \
      ms = vmlal_high_s16(ms, m0, vld1q_s16(b[ib].bsums));                                                            \
      ms = vmlal_s16(ms, vget_low_s16(m1), vld1_s16(b[ib].bsums + 8));                                                \
      ms = vmlal_high_s16(ms, m1, vld1q_s16(b[ib].bsums + 8));                                                        \
      int isum = 0;                                                                                                   \
      for (int h = 0; h < 2; ++h) {                                                                                   \
        for (int t = 0; t < 2; ++t) {                                                                                 \
          const uint8x16_t q = vld1q_u8(a[ib].qs + 32 * h + 16 * t);                                                  \
          for (int j = 0; j < 4; ++j) {                                                                               \
            const int e = 128 * h + 32 * j + 16 * t;                                                                  \
            const int32x4_t s = DOT16(vdupq_n_s32(0), vreinterpretq_s8_u8(two_bits(q, j)), vld1q_s8(b[ib].qs + e));   \
            isum += vaddvq_s32(s) * (a[ib].scales[e / 16] & 15);                                                      \
          }                                                                                                           \
        }                                                                                                             \
      }                                                                                                               \
      sum += (h2f(a[ib].d) * b[ib].d) * float(isum) - (h2f(a[ib].dmin) * b[ib].d) * float(vaddvq_s32(ms));            \
    }                                                                                                                 \
    return sum;                                                                                                       \
  }                                                                                                                   \
                                                                                                                      \
  ATTR float vec_dot_q3_k_##SUFFIX(int64_t n, const void* w, const void* x) {                                         \
    const BlockQ3_K* a = static_cast<const BlockQ3_K*>(w);                                                            \
    const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);                                                            \
    float sum = 0;                                                                                                    \
    for (int64_t ib = 0; ib < n / QK_K; ++ib) {                                                                       \
      int isum = 0;                                                                                                   \
      for (int h = 0; h < 2; ++h) {                                                                                   \
        for (int j = 0; j < 4; ++j) {                                                                                 \
          for (int t = 0; t < 2; ++t) {                                                                               \
            const int e = 128 * h + 32 * j + 16 * t;                                                                  \
            const int32x4_t s = DOT16(vdupq_n_s32(0), q3_k_values(a[ib], h, j, t), vld1q_s8(b[ib].qs + e));           \
            isum += vaddvq_s32(s) * (q3_k_scale(a[ib].scales, e / 16) - 32);                                          \
          }                                                                                                           \
        }                                                                                                             \
      }                                                                                                               \
      sum += (h2f(a[ib].d) * b[ib].d) * float(isum);                                                                  \
    }                                                                                                                 \
    return sum;                                                                                                       \
  }                                                                                                                   \
                                                                                                                      \
  ATTR float vec_dot_iq4_nl_##SUFFIX(int64_t n, const void* w, const void* x) {                                       \
    const BlockIQ4_NL* a = static_cast<const BlockIQ4_NL*>(w);                                                        \
    const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);                                                            \
    float sum = 0;                                                                                                    \
    for (int64_t ib = 0; ib < n / QK; ++ib) {                                                                         \
      const uint8x16_t q = vld1q_u8(a[ib].qs);                                                                        \
      const int32x4_t s = DOT16(DOT16(vdupq_n_s32(0), iq4_values(q, false), vld1q_s8(b[ib].qs)), iq4_values(q, true), \
                                vld1q_s8(b[ib].qs + 16));                                                             \
      sum += float(vaddvq_s32(s)) * (h2f(a[ib].d) * h2f(b[ib].d));                                                    \
    }                                                                                                                 \
    return sum;                                                                                                       \
  }                                                                                                                   \
                                                                                                                      \
  ATTR float vec_dot_iq4_xs_##SUFFIX(int64_t n, const void* w, const void* x) {                                       \
    const BlockIQ4_XS* a = static_cast<const BlockIQ4_XS*>(w);                                                        \
    const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);                                                            \
    float sum = 0;                                                                                                    \
    for (int64_t ib = 0; ib < n / QK_K; ++ib) {                                                                       \
      int isum = 0;                                                                                                   \
      for (int j = 0; j < QK_K / QK; ++j) {                                                                           \
        const uint8x16_t q = vld1q_u8(a[ib].qs + 16 * j);                                                             \
        const int8_t* y = b[ib].qs + QK * j;                                                                          \
        const int32x4_t s =                                                                                           \
            DOT16(DOT16(vdupq_n_s32(0), iq4_values(q, false), vld1q_s8(y)), iq4_values(q, true), vld1q_s8(y + 16));   \
        isum += vaddvq_s32(s) * (iq4_xs_scale(a[ib], j) - 32);                                                        \
      }                                                                                                               \
      sum += (h2f(a[ib].d) * b[ib].d) * float(isum);                                                                  \
    }                                                                                                                 \
    return sum;                                                                                                       \
  }

FOLIO_NEON_LOWBIT_DOTS(plain, , dot16_plain)
FOLIO_NEON_LOWBIT_DOTS(sdot, FOLIO_DOTPROD, dot16_sdot)

#undef FOLIO_NEON_LOWBIT_DOTS

}  // namespace
}  // namespace neon

void add_neon_lowbit_kernels(KernelTable& t, bool dotprod) {
  using namespace neon;
  slot(t, TensorType::Q2_K).vec_dot = dotprod ? vec_dot_q2_k_sdot : vec_dot_q2_k_plain;
  slot(t, TensorType::Q3_K).vec_dot = dotprod ? vec_dot_q3_k_sdot : vec_dot_q3_k_plain;
  slot(t, TensorType::IQ4_NL).vec_dot = dotprod ? vec_dot_iq4_nl_sdot : vec_dot_iq4_nl_plain;
  slot(t, TensorType::IQ4_XS).vec_dot = dotprod ? vec_dot_iq4_xs_sdot : vec_dot_iq4_xs_plain;
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_NEON
