// AVX2 (+FMA, F16C) kernels for the float formats, the activation quantizers (F16, BF16, Q8_0, Q8_1,
// Q8_K) and the 32-element block formats. The K-quants are in quant-avx2-k.cc.
//
// Numerics, shared with the scalar reference (quant-scalar.cc):
// - dequantize is bit-identical (same products; the fused forms used are exact, see store_affine_u8);
// - quantizers are bit-identical: same scale arithmetic, and round-half-away-from-zero (roundf) is
//   reproduced exactly for Q8_0/Q8_1, round-half-even for Q8_K;
// - dot products sum integer products exactly per block, then accumulate block results in float
//   vectors, so they differ from the scalar ones by float rounding only.
// Integer dots use vpmaddubsw (unsigned x signed bytes). For Q4/Q5 the unsigned operand is the stored
// quant (0..31) and the offset is subtracted as offset * Σ x, which is exact for every int8 x. Q8_0 x
// Q8_0 uses the sign trick (|w| times x with w's sign), exact as long as no activation byte is -128,
// which the Q8 quantizers never produce (they clamp to ±127).
#include "quant/kernels.h"

#if FOLIO_QUANT_X86

#include <cmath>
#include <cstring>

#include "quant/avx2-common.h"
#include "quant/blocks.h"

namespace folio::quant {
void add_avx2_k_kernels(KernelTable& t);       // quant-avx2-k.cc
void add_avx2_lowbit_kernels(KernelTable& t);  // quant-avx2-lowbit.cc

namespace avx2 {
namespace {

// ---------------------------------------------------------------------------------------------------
// F32 / F16 / BF16

FOLIO_AVX2 __m256 load_f16(const uint16_t* p) { return _mm256_cvtph_ps(load128(p)); }
FOLIO_AVX2 __m256 load_bf16(const uint16_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
}

FOLIO_AVX2 float vec_dot_f32(int64_t n, const void* w, const void* x) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

FOLIO_AVX2 void dequantize_f16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_f16(h + i));
  for (; i < n; ++i) dst[i] = h2f(h[i]);
}

FOLIO_AVX2 void quantize_f16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) h[i] = f2h(src[i]);
}

FOLIO_AVX2 float vec_dot_f16(int64_t n, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(load_f16(a + i), load_f16(b + i), acc0);
    acc1 = _mm256_fmadd_ps(load_f16(a + i + 8), load_f16(b + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(load_f16(a + i + 16), load_f16(b + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(load_f16(a + i + 24), load_f16(b + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load_f16(a + i), load_f16(b + i), acc0);
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += h2f(a[i]) * h2f(b[i]);
  return sum;
}

FOLIO_AVX2 void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_bf16(h + i));
  for (; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
}

// Round-to-nearest-even on the bit pattern, NaNs kept quiet: f32_to_bf16 (core/fp16.h), 8 at a time.
FOLIO_AVX2 __m128i f32_to_bf16_8(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd)), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
  // 8 x u32 (each < 2^16) -> 8 x u16
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  return _mm256_castsi256_si128(packed);
}

FOLIO_AVX2 void quantize_bf16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), f32_to_bf16_8(_mm256_loadu_ps(src + i)));
  for (; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}

FOLIO_AVX2 float vec_dot_bf16(int64_t n, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(load_bf16(a + i), load_bf16(b + i), acc0);
    acc1 = _mm256_fmadd_ps(load_bf16(a + i + 8), load_bf16(b + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(load_bf16(a + i + 16), load_bf16(b + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(load_bf16(a + i + 24), load_bf16(b + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load_bf16(a + i), load_bf16(b + i), acc0);
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += bf16_to_f32(a[i]) * bf16_to_f32(b[i]);
  return sum;
}

// ---------------------------------------------------------------------------------------------------
// Activation quantizers Q8_0, Q8_1, Q8_K

// roundf() exactly: v - trunc(v) is exact, so the half-way test is too.
FOLIO_AVX2 __m256 round_half_away(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
  const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
  return _mm256_add_ps(t, _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step));
}

// 4 x 8 int32 (each in int8 range) -> 32 int8 in order.
FOLIO_AVX2 __m256i pack_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i abcd = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

FOLIO_AVX2 float absmax32(const __m256 v[4]) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                                 _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
  return hmax(m);
}

// Quantizes 32 floats as Q8_0/Q8_1 do; returns d and stores the quants, *sum = Σ q.
FOLIO_AVX2 float quantize_32(const float* x, int8_t* qs, int* sum) {
  __m256 v[4];
  for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
  const float d = absmax32(v) / 127.0f;
  const __m256 id = _mm256_set1_ps(d != 0 ? 1.0f / d : 0.0f);
  __m256i q[4];
  for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v[k], id)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), pack_i8(q[0], q[1], q[2], q[3]));
  if (sum) *sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
  return d;
}

FOLIO_AVX2 void quantize_q8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t ib = 0; ib < n / QK; ++ib) b[ib].d = f2h(quantize_32(src + ib * QK, b[ib].qs, nullptr));
}

FOLIO_AVX2 void quantize_q8_1(const float* src, void* dst, int64_t n) {
  BlockQ8_1* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    int sum = 0;
    const float d = quantize_32(src + ib * QK, b[ib].qs, &sum);
    b[ib].d = f2h(d);
    b[ib].s = f2h(float(sum) * d);
  }
}

// Sums of the 16 groups of 16 in 8 vectors of 32 int8 (vector k holds groups 2k and 2k+1).
FOLIO_AVX2 __m256i group_sums8(const __m256i* q) {
  const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  __m256i t[4];
  for (int k = 0; k < 4; ++k) t[k] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q[k]), ones16);
  // t[k]: 128-bit lane 0 = four partial sums of group 2k, lane 1 = of group 2k+1
  const __m256i v = _mm256_hadd_epi32(_mm256_hadd_epi32(t[0], t[1]), _mm256_hadd_epi32(t[2], t[3]));
  // v: lane 0 = groups 0, 2, 4, 6; lane 1 = groups 1, 3, 5, 7
  return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

FOLIO_AVX2 void quantize_q8_k(const float* src, void* dst, int64_t n) {
  BlockQ8_K* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const float* x = src + ib * QK_K;
    __m256 vmax = _mm256_loadu_ps(x), vmin = vmax;
    for (int i = 8; i < QK_K; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      vmax = _mm256_max_ps(vmax, v);
      vmin = _mm256_min_ps(vmin, v);
    }
    const float hi = hmax(vmax), lo = hmin(vmin);
    // The value of largest magnitude with its sign; on a tie between +a and -a the first one counts,
    // as in the reference.
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
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127);
    __m256i q8[8];
    for (int k = 0; k < 8; ++k) {
      __m256i q[4];
      for (int j = 0; j < 4; ++j) {
        // cvtps rounds half to even in the default rounding mode, like the scalar nearbyint
        q[j] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 8 * j), vs)), top);
      }
      q8[k] = pack_i8(q[0], q[1], q[2], q[3]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[ib].qs + 32 * k), q8[k]);
    }
    const __m256i s0 = group_sums8(q8), s1 = group_sums8(q8 + 4);
    // 16 x i32 -> 16 x i16 in order
    const __m256i s = _mm256_permute4x64_epi64(_mm256_packs_epi32(s0, s1), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b[ib].bsums), s);
    b[ib].d = 1 / iscale;
  }
}

// ---------------------------------------------------------------------------------------------------
// Dequantize the 32-element block formats

FOLIO_AVX2 void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib)
    store_scaled_i8(load256(b[ib].qs), _mm256_set1_ps(h2f(b[ib].d)), dst + ib * QK);
}

FOLIO_AVX2 void dequantize_q8_1(const void* src, float* dst, int64_t n) {
  const BlockQ8_1* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib)
    store_scaled_i8(load256(b[ib].qs), _mm256_set1_ps(h2f(b[ib].d)), dst + ib * QK);
}

FOLIO_AVX2 void dequantize_q8_k(const void* src, float* dst, int64_t n) {
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const __m256 d = _mm256_set1_ps(b[ib].d);
    for (int k = 0; k < QK_K / 32; ++k) store_scaled_i8(load256(b[ib].qs + 32 * k), d, dst + ib * QK_K + 32 * k);
  }
}

FOLIO_AVX2 void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const __m256i q = _mm256_sub_epi8(nibbles16(b[ib].qs), _mm256_set1_epi8(8));
    store_scaled_i8(q, _mm256_set1_ps(h2f(b[ib].d)), dst + ib * QK);
  }
}

FOLIO_AVX2 void dequantize_q4_1(const void* src, float* dst, int64_t n) {
  const BlockQ4_1* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    store_affine_u8(nibbles16(b[ib].qs), _mm256_set1_ps(h2f(b[ib].d)), _mm256_set1_ps(h2f(b[ib].m)), dst + ib * QK);
  }
}

// The 5-bit quants 0..31 of a Q5 block.
FOLIO_AVX2 __m256i q5_values(const uint8_t* qs, const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  return _mm256_or_si256(nibbles16(qs), _mm256_and_si256(bits_to_bytes(bits), _mm256_set1_epi8(16)));
}

FOLIO_AVX2 void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  const BlockQ5_0* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const __m256i q = _mm256_sub_epi8(q5_values(b[ib].qs, b[ib].qh), _mm256_set1_epi8(16));
    store_scaled_i8(q, _mm256_set1_ps(h2f(b[ib].d)), dst + ib * QK);
  }
}

FOLIO_AVX2 void dequantize_q5_1(const void* src, float* dst, int64_t n) {
  const BlockQ5_1* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    store_affine_u8(q5_values(b[ib].qs, b[ib].qh), _mm256_set1_ps(h2f(b[ib].d)), _mm256_set1_ps(h2f(b[ib].m)),
                    dst + ib * QK);
  }
}

// ---------------------------------------------------------------------------------------------------
// Dot products of the 32-element block formats. Two independent accumulators hide the FMA latency.

// Σ u·y over 32 bytes as 8 int32 lanes; u unsigned. vpmaddubsw saturates pairs of products at int16,
// which the callers stay below (u <= 31 against any int8, or |u|, |y| <= 127).
FOLIO_AVX2 __m256i dot_u8_i8(__m256i u, __m256i y) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), _mm256_set1_epi16(1));
}

// Σ (u - offset)·y: the offset times Σ y is subtracted in 16 bits (|each pair| <= 2 * 31 * 128).
FOLIO_AVX2 __m256i dot_u8_i8_offset(__m256i u, __m256i y, int8_t offset) {
  const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(u, y), _mm256_maddubs_epi16(_mm256_set1_epi8(offset), y));
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

FOLIO_AVX2 __m256 step_q8_0(const BlockQ8_0& a, const BlockQ8_0& b, __m256 acc) {
  const __m256i x = load256(a.qs), y = load256(b.qs);
  const __m256i s = dot_u8_i8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
  return _mm256_fmadd_ps(_mm256_set1_ps(h2f(a.d) * h2f(b.d)), _mm256_cvtepi32_ps(s), acc);
}

FOLIO_AVX2 __m256 step_q4_0(const BlockQ4_0& a, const BlockQ8_0& b, __m256 acc) {
  const __m256i s = dot_u8_i8_offset(nibbles16(a.qs), load256(b.qs), 8);
  return _mm256_fmadd_ps(_mm256_set1_ps(h2f(a.d) * h2f(b.d)), _mm256_cvtepi32_ps(s), acc);
}

FOLIO_AVX2 __m256 step_q5_0(const BlockQ5_0& a, const BlockQ8_0& b, __m256 acc) {
  const __m256i s = dot_u8_i8_offset(q5_values(a.qs, a.qh), load256(b.qs), 16);
  return _mm256_fmadd_ps(_mm256_set1_ps(h2f(a.d) * h2f(b.d)), _mm256_cvtepi32_ps(s), acc);
}

FOLIO_AVX2 __m256 step_q4_1(const BlockQ4_1& a, const BlockQ8_1& b, __m256 acc) {
  const __m256i s = dot_u8_i8(nibbles16(a.qs), load256(b.qs));
  return _mm256_fmadd_ps(_mm256_set1_ps(h2f(a.d) * h2f(b.d)), _mm256_cvtepi32_ps(s), acc);
}

FOLIO_AVX2 __m256 step_q5_1(const BlockQ5_1& a, const BlockQ8_1& b, __m256 acc) {
  const __m256i s = dot_u8_i8(q5_values(a.qs, a.qh), load256(b.qs));
  return _mm256_fmadd_ps(_mm256_set1_ps(h2f(a.d) * h2f(b.d)), _mm256_cvtepi32_ps(s), acc);
}

// The loop shared by every 32-element format; Step is one of the step_* functions above.
#define FOLIO_DOT_BLOCKS(Step, WBlock, XBlock)                   \
  const WBlock* a = static_cast<const WBlock*>(w);               \
  const XBlock* b = static_cast<const XBlock*>(x);               \
  const int64_t nb = n / QK;                                     \
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(); \
  int64_t ib = 0;                                                \
  for (; ib + 1 < nb; ib += 2) {                                 \
    acc0 = Step(a[ib], b[ib], acc0);                             \
    acc1 = Step(a[ib + 1], b[ib + 1], acc1);                     \
  }                                                              \
  if (ib < nb) acc0 = Step(a[ib], b[ib], acc0);

FOLIO_AVX2 float vec_dot_q8_0(int64_t n, const void* w, const void* x) {
  FOLIO_DOT_BLOCKS(step_q8_0, BlockQ8_0, BlockQ8_0)
  return hsum(_mm256_add_ps(acc0, acc1));
}

FOLIO_AVX2 float vec_dot_q4_0(int64_t n, const void* w, const void* x) {
  FOLIO_DOT_BLOCKS(step_q4_0, BlockQ4_0, BlockQ8_0)
  return hsum(_mm256_add_ps(acc0, acc1));
}

FOLIO_AVX2 float vec_dot_q5_0(int64_t n, const void* w, const void* x) {
  FOLIO_DOT_BLOCKS(step_q5_0, BlockQ5_0, BlockQ8_0)
  return hsum(_mm256_add_ps(acc0, acc1));
}

// Q4_1/Q5_1 add m * s per block (the min times the activation block's d·Σq), in two scalar sums that
// follow the two vector accumulators so that neither becomes a serial chain.
#define FOLIO_DOT_BLOCKS_MIN(Step, WBlock)                       \
  const WBlock* a = static_cast<const WBlock*>(w);               \
  const BlockQ8_1* b = static_cast<const BlockQ8_1*>(x);         \
  const int64_t nb = n / QK;                                     \
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(); \
  float ms0 = 0, ms1 = 0;                                        \
  int64_t ib = 0;                                                \
  for (; ib + 1 < nb; ib += 2) {                                 \
    acc0 = Step(a[ib], b[ib], acc0);                             \
    acc1 = Step(a[ib + 1], b[ib + 1], acc1);                     \
    ms0 += h2f(a[ib].m) * h2f(b[ib].s);                          \
    ms1 += h2f(a[ib + 1].m) * h2f(b[ib + 1].s);                  \
  }                                                              \
  if (ib < nb) {                                                 \
    acc0 = Step(a[ib], b[ib], acc0);                             \
    ms0 += h2f(a[ib].m) * h2f(b[ib].s);                          \
  }                                                              \
  return hsum(_mm256_add_ps(acc0, acc1)) + (ms0 + ms1);

FOLIO_AVX2 float vec_dot_q4_1(int64_t n, const void* w, const void* x){
    FOLIO_DOT_BLOCKS_MIN(step_q4_1, BlockQ4_1)} FOLIO_AVX2 float vec_dot_q5_1(int64_t n, const void* w, const void* x) {
  FOLIO_DOT_BLOCKS_MIN(step_q5_1, BlockQ5_1)
}

#undef FOLIO_DOT_BLOCKS_MIN
#undef FOLIO_DOT_BLOCKS

}  // namespace
}  // namespace avx2

void add_avx2_kernels(KernelTable& t) {
  using namespace avx2;
  slot(t, TensorType::F32).vec_dot = vec_dot_f32;
  slot(t, TensorType::F16) = {dequantize_f16, quantize_f16, vec_dot_f16};
  slot(t, TensorType::BF16) = {dequantize_bf16, quantize_bf16, vec_dot_bf16};
  slot(t, TensorType::Q8_0) = {dequantize_q8_0, quantize_q8_0, vec_dot_q8_0};
  slot(t, TensorType::Q8_1).dequantize_row = dequantize_q8_1;
  slot(t, TensorType::Q8_1).quantize_row = quantize_q8_1;
  slot(t, TensorType::Q8_K).dequantize_row = dequantize_q8_k;
  slot(t, TensorType::Q8_K).quantize_row = quantize_q8_k;
  // Weight quantization of the formats below stays scalar: it runs once per model, not per matmul.
  slot(t, TensorType::Q4_0).dequantize_row = dequantize_q4_0;
  slot(t, TensorType::Q4_0).vec_dot = vec_dot_q4_0;
  slot(t, TensorType::Q4_1).dequantize_row = dequantize_q4_1;
  slot(t, TensorType::Q4_1).vec_dot = vec_dot_q4_1;
  slot(t, TensorType::Q5_0).dequantize_row = dequantize_q5_0;
  slot(t, TensorType::Q5_0).vec_dot = vec_dot_q5_0;
  slot(t, TensorType::Q5_1).dequantize_row = dequantize_q5_1;
  slot(t, TensorType::Q5_1).vec_dot = vec_dot_q5_1;
  add_avx2_k_kernels(t);
  add_avx2_lowbit_kernels(t);
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_X86
