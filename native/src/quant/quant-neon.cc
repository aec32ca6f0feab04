// NEON (arm64) kernels: F32/F16 dot products and F16 conversions, the Q8_0/Q8_1/Q8_K activation
// quantizers, and dequantize + dot for Q8_0, Q4_0, Q4_K and Q6_K. Other entries fall back to scalar.
//
// Integer dots are signed x signed (vmull_s8 + vpadalq_s16, or SDOT with the dotprod extension), so
// no offset tricks are needed and every int8 value is exact. Each block's (or sub-block's) integer sum
// is reduced and scaled in the same float order as the scalar reference, so these dot products match
// it bit for bit in practice; quantizers use FCVTAS (round half away, = roundf) and FCVTNS (half even).
#include "quant/kernels.h"

#if FOLIO_QUANT_NEON

#include <arm_neon.h>

#include "quant/neon-common.h"

#include <cmath>
#include <cstring>

#include "quant/blocks.h"

namespace folio::quant {
void add_neon_lowbit_kernels(KernelTable& t, bool dotprod);  // quant-neon-lowbit.cc

namespace neon {
namespace {
using neon_common::dot16_plain;
using neon_common::dot16_sdot;
using neon_common::h2f;

// ---------------------------------------------------------------------------------------------------
// F32 / F16

float vec_dot_f32(int64_t n, const void* w, const void* x) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  float32x4_t acc0 = vdupq_n_f32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
    acc1 = vfmaq_f32(acc1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    acc2 = vfmaq_f32(acc2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
    acc3 = vfmaq_f32(acc3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
  }
  for (; i + 4 <= n; i += 4) acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
  float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc0, acc1), vaddq_f32(acc2, acc3)));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

inline float16x8_t load_f16x8(const uint16_t* p) { return vreinterpretq_f16_u16(vld1q_u16(p)); }

float vec_dot_f16(int64_t n, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  float32x4_t acc0 = vdupq_n_f32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const float16x8_t a0 = load_f16x8(a + i), b0 = load_f16x8(b + i);
    const float16x8_t a1 = load_f16x8(a + i + 8), b1 = load_f16x8(b + i + 8);
    acc0 = vfmaq_f32(acc0, vcvt_f32_f16(vget_low_f16(a0)), vcvt_f32_f16(vget_low_f16(b0)));
    acc1 = vfmaq_f32(acc1, vcvt_high_f32_f16(a0), vcvt_high_f32_f16(b0));
    acc2 = vfmaq_f32(acc2, vcvt_f32_f16(vget_low_f16(a1)), vcvt_f32_f16(vget_low_f16(b1)));
    acc3 = vfmaq_f32(acc3, vcvt_high_f32_f16(a1), vcvt_high_f32_f16(b1));
  }
  for (; i + 4 <= n; i += 4) {
    acc0 = vfmaq_f32(acc0, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(a + i))),
                     vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(b + i))));
  }
  float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc0, acc1), vaddq_f32(acc2, acc3)));
  for (; i < n; ++i) sum += h2f(a[i]) * h2f(b[i]);
  return sum;
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t v = load_f16x8(h + i);
    vst1q_f32(dst + i, vcvt_f32_f16(vget_low_f16(v)));
    vst1q_f32(dst + i + 4, vcvt_high_f32_f16(v));
  }
  for (; i < n; ++i) dst[i] = h2f(h[i]);
}

// FCVT rounds to nearest even under the default FPCR, like f32_to_fp16.
void quantize_f16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t v = vcvt_high_f16_f32(vcvt_f16_f32(vld1q_f32(src + i)), vld1q_f32(src + i + 4));
    vst1q_u16(h + i, vreinterpretq_u16_f16(v));
  }
  for (; i < n; ++i) h[i] = f32_to_fp16(src[i]);
}

// ---------------------------------------------------------------------------------------------------
// Activation quantizers

// 16 int32 (4 vectors, each value in int8 range) -> 16 int8.
inline int8x16_t narrow16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
  const int16x8_t ab = vcombine_s16(vmovn_s32(a), vmovn_s32(b)), cd = vcombine_s16(vmovn_s32(c), vmovn_s32(d));
  return vcombine_s8(vmovn_s16(ab), vmovn_s16(cd));
}

// Q8_0/Q8_1 rule for 32 floats: d = amax / 127, q = roundf(x / d) (FCVTAS rounds half away from zero).
float quantize_32(const float* x, int8_t* qs, int* sum) {
  float32x4_t v[8];
  float32x4_t m = vdupq_n_f32(0);
  for (int k = 0; k < 8; ++k) {
    v[k] = vld1q_f32(x + 4 * k);
    m = vmaxq_f32(m, vabsq_f32(v[k]));
  }
  const float d = vmaxvq_f32(m) / 127.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  int32x4_t q[8];
  for (int k = 0; k < 8; ++k) q[k] = vcvtaq_s32_f32(vmulq_n_f32(v[k], id));
  vst1q_s8(qs, narrow16(q[0], q[1], q[2], q[3]));
  vst1q_s8(qs + 16, narrow16(q[4], q[5], q[6], q[7]));
  if (sum) {
    int32x4_t s = vaddq_s32(vaddq_s32(vaddq_s32(q[0], q[1]), vaddq_s32(q[2], q[3])),
                            vaddq_s32(vaddq_s32(q[4], q[5]), vaddq_s32(q[6], q[7])));
    *sum = vaddvq_s32(s);
  }
  return d;
}

void quantize_q8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t ib = 0; ib < n / QK; ++ib) b[ib].d = f32_to_fp16(quantize_32(src + ib * QK, b[ib].qs, nullptr));
}

void quantize_q8_1(const float* src, void* dst, int64_t n) {
  BlockQ8_1* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    int sum = 0;
    const float d = quantize_32(src + ib * QK, b[ib].qs, &sum);
    b[ib].d = f32_to_fp16(d);
    b[ib].s = f32_to_fp16(float(sum) * d);
  }
}

// Q8_K rule: the value of largest magnitude (first on a ±tie) maps to -127, q = round-half-even.
void quantize_q8_k(const float* src, void* dst, int64_t n) {
  BlockQ8_K* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const float* x = src + ib * QK_K;
    float32x4_t vmax = vld1q_f32(x), vmin = vmax;
    for (int i = 4; i < QK_K; i += 4) {
      const float32x4_t v = vld1q_f32(x + i);
      vmax = vmaxq_f32(vmax, v);
      vmin = vminq_f32(vmin, v);
    }
    const float hi = vmaxvq_f32(vmax), lo = vminvq_f32(vmin);
    float max = hi > -lo ? hi : lo;
    if (hi == -lo) {
      for (int i = 0; i < QK_K; ++i) {
        if (std::fabs(x[i]) == hi) {
          max = x[i];
          break;
        }
      }
    }
    if (max == 0) {
      std::memset(&b[ib], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    const int32x4_t top = vdupq_n_s32(127);
    for (int g = 0; g < QK_K / 16; ++g) {
      int32x4_t q[4];
      for (int k = 0; k < 4; ++k)
        q[k] = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + 16 * g + 4 * k), iscale)), top);
      const int8x16_t q8 = narrow16(q[0], q[1], q[2], q[3]);
      vst1q_s8(b[ib].qs + 16 * g, q8);
      b[ib].bsums[g] = vaddlvq_s8(q8);
    }
    b[ib].d = 1 / iscale;
  }
}

// ---------------------------------------------------------------------------------------------------
// Dequantize

// y[0..16) = d * q for 16 signed bytes.
inline void store16_scaled(int8x16_t q, float d, float* y) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
  vst1q_f32(y + 0, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d));
  vst1q_f32(y + 4, vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(lo)), d));
  vst1q_f32(y + 8, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d));
  vst1q_f32(y + 12, vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(hi)), d));
}

// y[0..16) = d * q - m for 16 unsigned bytes (the product is exact, so the order of rounding is moot).
inline void store16_affine(uint8x16_t q, float d, float m, float* y) {
  const uint16x8_t lo = vmovl_u8(vget_low_u8(q)), hi = vmovl_high_u8(q);
  const float32x4_t vm = vdupq_n_f32(m);
  vst1q_f32(y + 0, vsubq_f32(vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo))), d), vm));
  vst1q_f32(y + 4, vsubq_f32(vmulq_n_f32(vcvtq_f32_u32(vmovl_high_u16(lo)), d), vm));
  vst1q_f32(y + 8, vsubq_f32(vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi))), d), vm));
  vst1q_f32(y + 12, vsubq_f32(vmulq_n_f32(vcvtq_f32_u32(vmovl_high_u16(hi)), d), vm));
}

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float d = h2f(b[ib].d);
    store16_scaled(vld1q_s8(b[ib].qs), d, dst + ib * QK);
    store16_scaled(vld1q_s8(b[ib].qs + 16), d, dst + ib * QK + 16);
  }
}

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
  const uint8x16_t m4 = vdupq_n_u8(15);
  const int8x16_t eight = vdupq_n_s8(8);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float d = h2f(b[ib].d);
    const uint8x16_t q = vld1q_u8(b[ib].qs);
    store16_scaled(vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), eight), d, dst + ib * QK);
    store16_scaled(vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight), d, dst + ib * QK + 16);
  }
}

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  const BlockQ4_K* b = static_cast<const BlockQ4_K*>(src);
  const uint8x16_t m4 = vdupq_n_u8(15);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    uint8_t sc[8], mn[8];
    unpack_scales_k4(b[ib].scales, sc, mn);
    const float d = h2f(b[ib].d), dmin = h2f(b[ib].dmin);
    float* y = dst + ib * QK_K;
    for (int c = 0; c < 4; ++c) {
      const float d0 = d * float(sc[2 * c]), m0 = dmin * float(mn[2 * c]);
      const float d1 = d * float(sc[2 * c + 1]), m1 = dmin * float(mn[2 * c + 1]);
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t q = vld1q_u8(b[ib].qs + 32 * c + 16 * h);
        store16_affine(vandq_u8(q, m4), d0, m0, y + 64 * c + 16 * h);
        store16_affine(vshrq_n_u8(q, 4), d1, m1, y + 64 * c + 32 + 16 * h);
      }
    }
  }
}

// The 16 six-bit quants, minus 32, of elements 128h + 32k + 16t + (0..15) of a Q6_K block.
inline int8x16_t q6_k_values(const BlockQ6_K& b, int h, int k, int t) {
  const uint8x16_t ql = vld1q_u8(b.ql + 64 * h + 32 * (k & 1) + 16 * t);
  const uint8x16_t qh = vld1q_u8(b.qh + 32 * h + 16 * t);
  const uint8x16_t lo = k < 2 ? vandq_u8(ql, vdupq_n_u8(15)) : vshrq_n_u8(ql, 4);
  uint8x16_t hb;
  switch (k) {
    case 0: hb = qh; break;
    case 1: hb = vshrq_n_u8(qh, 2); break;
    case 2: hb = vshrq_n_u8(qh, 4); break;
    default: hb = vshrq_n_u8(qh, 6); break;
  }
  const uint8x16_t q = vorrq_u8(lo, vshlq_n_u8(vandq_u8(hb, vdupq_n_u8(3)), 4));
  return vsubq_s8(vreinterpretq_s8_u8(q), vdupq_n_s8(32));
}

void dequantize_q6_k(const void* src, float* dst, int64_t n) {
  const BlockQ6_K* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const float d = h2f(b[ib].d);
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        for (int t = 0; t < 2; ++t) {
          const int e = 128 * h + 32 * k + 16 * t;
          store16_scaled(q6_k_values(b[ib], h, k, t), d * float(b[ib].scales[e / 16]), dst + ib * QK_K + e);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Dot products, generated twice: with the baseline widening multiply-accumulate and with SDOT.

#define FOLIO_NEON_DOTS(SUFFIX, ATTR, DOT16)                                                                           \
  ATTR float vec_dot_q8_0_##SUFFIX(int64_t n, const void* w, const void* x) {                                          \
    const BlockQ8_0* a = static_cast<const BlockQ8_0*>(w);                                                             \
    const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);                                                             \
    float sum = 0;                                                                                                     \
    for (int64_t ib = 0; ib < n / QK; ++ib) {                                                                          \
      int32x4_t s = DOT16(vdupq_n_s32(0), vld1q_s8(a[ib].qs), vld1q_s8(b[ib].qs));                                     \
      s = DOT16(s, vld1q_s8(a[ib].qs + 16), vld1q_s8(b[ib].qs + 16));                                                  \
      sum += float(vaddvq_s32(s)) * (h2f(a[ib].d) * h2f(b[ib].d));                                                     \
    }                                                                                                                  \
    return sum;                                                                                                        \
  }                                                                                                                    \
                                                                                                                       \
  ATTR float vec_dot_q4_0_##SUFFIX(int64_t n, const void* w, const void* x) {                                          \
    const BlockQ4_0* a = static_cast<const BlockQ4_0*>(w);                                                             \
    const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);                                                             \
    const uint8x16_t m4 = vdupq_n_u8(15);                                                                              \
    const int8x16_t eight = vdupq_n_s8(8);                                                                             \
    float sum = 0;                                                                                                     \
    for (int64_t ib = 0; ib < n / QK; ++ib) {                                                                          \
      const uint8x16_t q = vld1q_u8(a[ib].qs);                                                                         \
      const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), eight);                                      \
      const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight);                                     \
      const int32x4_t s = DOT16(DOT16(vdupq_n_s32(0), lo, vld1q_s8(b[ib].qs)), hi, vld1q_s8(b[ib].qs + 16));           \
      sum += float(vaddvq_s32(s)) * (h2f(a[ib].d) * h2f(b[ib].d));                                                     \
    }                                                                                                                  \
    return sum;                                                                                                        \
  }                                                                                                                    \
                                                                                                                       \
  ATTR float vec_dot_q4_k_##SUFFIX(int64_t n, const void* w, const void* x) {                                          \
    const BlockQ4_K* a = static_cast<const BlockQ4_K*>(w);                                                             \
    const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);                                                             \
    const uint8x16_t m4 = vdupq_n_u8(15);                                                                              \
    float sum = 0;                                                                                                     \
    for (int64_t ib = 0; ib < n / QK_K; ++ib) {                                                                        \
      uint8_t sc[8], mn[8];                                                                                            \
      unpack_scales_k4(a[ib].scales, sc, mn);                                                                          \
      /* Σ_j m_j (bsums[2j] + bsums[2j+1]) */                                                                         \
      const int16x8_t bs = vpaddq_s16(vld1q_s16(b[ib].bsums), vld1q_s16(b[ib].bsums + 8));                             \
      const int16x8_t m16 = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));                                              \
      const int msum = vaddvq_s32(vaddq_s32(vmull_s16(vget_low_s16(bs), vget_low_s16(m16)), vmull_high_s16(bs, m16))); \
      int isum = 0;                                                                                                    \
      for (int c = 0; c < 4; ++c) {                                                                                    \
        const uint8x16_t q0 = vld1q_u8(a[ib].qs + 32 * c), q1 = vld1q_u8(a[ib].qs + 32 * c + 16);                      \
        const int8_t* y = b[ib].qs + 64 * c;                                                                           \
        int32x4_t lo = DOT16(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(q0, m4)), vld1q_s8(y));                      \
        lo = DOT16(lo, vreinterpretq_s8_u8(vandq_u8(q1, m4)), vld1q_s8(y + 16));                                       \
        int32x4_t hi = DOT16(vdupq_n_s32(0), vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), vld1q_s8(y + 32));                \
        hi = DOT16(hi, vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)), vld1q_s8(y + 48));                                      \
        isum += vaddvq_s32(lo) * sc[2 * c] + vaddvq_s32(hi) * sc[2 * c + 1];                                           \
      }                                                                                                                \
      sum += (h2f(a[ib].d) * b[ib].d) * float(isum) - (h2f(a[ib].dmin) * b[ib].d) * float(msum);                       \
    }                                                                                                                  \
    return sum;                                                                                                        \
  }                                                                                                                    \
                                                                                                                       \
  ATTR float vec_dot_q6_k_##SUFFIX(int64_t n, const void* w, const void* x) {                                          \
    const BlockQ6_K* a = static_cast<const BlockQ6_K*>(w);                                                             \
    const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);                                                             \
    float sum = 0;                                                                                                     \
    for (int64_t ib = 0; ib < n / QK_K; ++ib) {                                                                        \
      int isum = 0;                                                                                                    \
      for (int h = 0; h < 2; ++h) {                                                                                    \
        for (int k = 0; k < 4; ++k) {                                                                                  \
          for (int t = 0; t < 2; ++t) {                                                                                \
            const int e = 128 * h + 32 * k + 16 * t;                                                                   \
            const int32x4_t s = DOT16(vdupq_n_s32(0), q6_k_values(a[ib], h, k, t), vld1q_s8(b[ib].qs + e));            \
            isum += vaddvq_s32(s) * a[ib].scales[e / 16];                                                              \
          }                                                                                                            \
        }                                                                                                              \
      }                                                                                                                \
      sum += (h2f(a[ib].d) * b[ib].d) * float(isum);                                                                   \
    }                                                                                                                  \
    return sum;                                                                                                        \
  }

FOLIO_NEON_DOTS(plain, , dot16_plain)
FOLIO_NEON_DOTS(sdot, FOLIO_DOTPROD, dot16_sdot)

#undef FOLIO_NEON_DOTS

}  // namespace
}  // namespace neon

void add_neon_kernels(KernelTable& t, bool dotprod) {
  using namespace neon;
  slot(t, TensorType::F32).vec_dot = vec_dot_f32;
  slot(t, TensorType::F16) = {dequantize_f16, quantize_f16, vec_dot_f16};
  slot(t, TensorType::Q8_0).dequantize_row = dequantize_q8_0;
  slot(t, TensorType::Q8_0).quantize_row = quantize_q8_0;
  slot(t, TensorType::Q8_1).quantize_row = quantize_q8_1;
  slot(t, TensorType::Q8_K).quantize_row = quantize_q8_k;
  slot(t, TensorType::Q4_0).dequantize_row = dequantize_q4_0;
  slot(t, TensorType::Q4_K).dequantize_row = dequantize_q4_k;
  slot(t, TensorType::Q6_K).dequantize_row = dequantize_q6_k;
  slot(t, TensorType::Q8_0).vec_dot = dotprod ? vec_dot_q8_0_sdot : vec_dot_q8_0_plain;
  slot(t, TensorType::Q4_0).vec_dot = dotprod ? vec_dot_q4_0_sdot : vec_dot_q4_0_plain;
  slot(t, TensorType::Q4_K).vec_dot = dotprod ? vec_dot_q4_k_sdot : vec_dot_q4_k_plain;
  slot(t, TensorType::Q6_K).vec_dot = dotprod ? vec_dot_q6_k_sdot : vec_dot_q6_k_plain;
  add_neon_lowbit_kernels(t, dotprod);
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_NEON
