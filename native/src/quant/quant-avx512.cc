// AVX-512 (F, BW, VL, DQ; VNNI where the CPU has it) kernels where 512-bit vectors pay off: the F32,
// F16 and BF16 dot products and F16 conversions, and the Q8_0, Q4_0, Q4_K and Q6_K dot products.
// Everything else comes from the AVX2 table. Same numerics as the AVX2 kernels (quant-avx2.cc): exact
// integer sums per block, float accumulation across blocks.
// GCC 12's avx512fintrin.h builds some intrinsics on _mm512_undefined_*() and then warns about it where
// they are inlined; the values are never read. The pragma must precede the header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "quant/kernels.h"

#if FOLIO_QUANT_X86

#include "quant/avx2-common.h"
#include "quant/blocks.h"

#define FOLIO_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define FOLIO_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

namespace folio::quant {
namespace avx512 {
namespace {

using avx2::h2f;
using avx2::load128;
using avx2::load256;

FOLIO_AVX512 float hsum(__m512 v) {
  return avx2::hsum(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

FOLIO_AVX512 __m512i load512(const void* p) { return _mm512_loadu_si512(p); }

// Two 32-byte rows as one 64-byte vector.
FOLIO_AVX512 __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
FOLIO_AVX512 __m512 join_ps(float lo, float hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(lo)), _mm256_set1_ps(hi), 1);
}

FOLIO_AVX512 __mmask16 tail_mask(int64_t left) { return __mmask16((1u << left) - 1); }

// ---------------------------------------------------------------------------------------------------
// F32 / F16 / BF16: four 16-wide accumulators, then one 16-wide step, then a masked tail.

FOLIO_AVX512 __m512 load_f16(const uint16_t* p) { return _mm512_cvtph_ps(load256(p)); }
FOLIO_AVX512 __m512 load_f16_tail(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
FOLIO_AVX512 __m512 load_bf16(const uint16_t* p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load256(p)), 16));
}
FOLIO_AVX512 __m512 load_bf16_tail(const uint16_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

FOLIO_AVX512 float vec_dot_f32(int64_t n, const void* w, const void* x) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
    acc2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), acc2);
    acc3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), acc3);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc1);
  }
  return hsum(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

FOLIO_AVX512 float vec_dot_f16(int64_t n, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    acc0 = _mm512_fmadd_ps(load_f16(a + i), load_f16(b + i), acc0);
    acc1 = _mm512_fmadd_ps(load_f16(a + i + 16), load_f16(b + i + 16), acc1);
    acc2 = _mm512_fmadd_ps(load_f16(a + i + 32), load_f16(b + i + 32), acc2);
    acc3 = _mm512_fmadd_ps(load_f16(a + i + 48), load_f16(b + i + 48), acc3);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(load_f16(a + i), load_f16(b + i), acc0);
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    acc1 = _mm512_fmadd_ps(load_f16_tail(a + i, m), load_f16_tail(b + i, m), acc1);
  }
  return hsum(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

FOLIO_AVX512 float vec_dot_bf16(int64_t n, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    acc0 = _mm512_fmadd_ps(load_bf16(a + i), load_bf16(b + i), acc0);
    acc1 = _mm512_fmadd_ps(load_bf16(a + i + 16), load_bf16(b + i + 16), acc1);
    acc2 = _mm512_fmadd_ps(load_bf16(a + i + 32), load_bf16(b + i + 32), acc2);
    acc3 = _mm512_fmadd_ps(load_bf16(a + i + 48), load_bf16(b + i + 48), acc3);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(load_bf16(a + i), load_bf16(b + i), acc0);
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    acc1 = _mm512_fmadd_ps(load_bf16_tail(a + i, m), load_bf16_tail(b + i, m), acc1);
  }
  return hsum(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

FOLIO_AVX512 void dequantize_f16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, load_f16(h + i));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(dst + i, m, load_f16_tail(h + i, m));
  }
}

FOLIO_AVX512 void quantize_f16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(h + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(h + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT));
  }
}

// ---------------------------------------------------------------------------------------------------
// Q8_0 and Q4_0 against Q8_0, two blocks per 512-bit vector (lanes 0-7: first block, 8-15: second).
//
// With VNNI, vpdpbusd multiplies unsigned by signed bytes and sums four products into int32 without
// saturation, so w·y = (w + 128)·y - 128·Σy is exact for every int8 w and y. Without VNNI the Q8_0 dot
// uses the sign trick |w|·(y with w's sign), exact when y has no -128 (see quant-avx2.cc).

FOLIO_AVX512_VNNI __m512i dot2_q8_0_vnni(__m512i w, __m512i y) {
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  const __m512i z = _mm512_setzero_si512();
  return _mm512_sub_epi32(_mm512_dpbusd_epi32(z, _mm512_xor_si512(w, flip), y), _mm512_dpbusd_epi32(z, flip, y));
}

FOLIO_AVX512 __m512i dot2_q8_0_plain(__m512i w, __m512i y) {
  const __m512i neg_y = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(w), _mm512_setzero_si512(), y);
  return _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_abs_epi8(w), neg_y), _mm512_set1_epi16(1));
}

// The nibbles of two Q4_0 blocks (0..15), 32 bytes each.
FOLIO_AVX512 __m512i nibbles2(const BlockQ4_0& a, const BlockQ4_0& b) {
  return join(avx2::nibbles16(a.qs), avx2::nibbles16(b.qs));
}

FOLIO_AVX512_VNNI __m512i dot2_q4_0_vnni(__m512i u, __m512i y) {
  const __m512i z = _mm512_setzero_si512();
  return _mm512_sub_epi32(_mm512_dpbusd_epi32(z, u, y), _mm512_dpbusd_epi32(z, _mm512_set1_epi8(8), y));
}

FOLIO_AVX512 __m512i dot2_q4_0_plain(__m512i u, __m512i y) {
  const __m512i p = _mm512_sub_epi16(_mm512_maddubs_epi16(u, y), _mm512_maddubs_epi16(_mm512_set1_epi8(8), y));
  return _mm512_madd_epi16(p, _mm512_set1_epi16(1));
}

// The loop shared by the four Q8_0/Q4_0 kernels: two blocks per vector, two vectors per iteration into
// separate accumulators; a last odd block runs with a zero upper half.
#define FOLIO_DOT2_STEP(LOAD_W, DOT, i, acc)                                                                           \
  acc = _mm512_fmadd_ps(join_ps(h2f(a[i].d) * h2f(b[i].d), h2f(a[i + 1].d) * h2f(b[i + 1].d)),                         \
                        _mm512_cvtepi32_ps(DOT(LOAD_W(a[i], a[i + 1]), join(load256(b[i].qs), load256(b[i + 1].qs)))), \
                        acc)

#define FOLIO_DOT2_LOOP(WBlock, LOAD_W, DOT)                                                         \
  const WBlock* a = static_cast<const WBlock*>(w);                                                   \
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);                                             \
  const int64_t nb = n / QK;                                                                         \
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();                                     \
  int64_t ib = 0;                                                                                    \
  for (; ib + 3 < nb; ib += 4) {                                                                     \
    FOLIO_DOT2_STEP(LOAD_W, DOT, ib, acc0);                                                          \
    FOLIO_DOT2_STEP(LOAD_W, DOT, ib + 2, acc1);                                                      \
  }                                                                                                  \
  if (ib + 1 < nb) {                                                                                 \
    FOLIO_DOT2_STEP(LOAD_W, DOT, ib, acc0);                                                          \
    ib += 2;                                                                                         \
  }                                                                                                  \
  if (ib < nb) {                                                                                     \
    const __m512i s = DOT(LOAD_W(a[ib], a[ib]), join(load256(b[ib].qs), _mm256_setzero_si256()));    \
    acc1 = _mm512_fmadd_ps(join_ps(h2f(a[ib].d) * h2f(b[ib].d), 0.0f), _mm512_cvtepi32_ps(s), acc1); \
  }                                                                                                  \
  return hsum(_mm512_add_ps(acc0, acc1));

FOLIO_AVX512 __m512i q8_0_pair(const BlockQ8_0& a, const BlockQ8_0& b) { return join(load256(a.qs), load256(b.qs)); }

FOLIO_AVX512_VNNI float vec_dot_q8_0_vnni(int64_t n, const void* w, const void* x){
    FOLIO_DOT2_LOOP(BlockQ8_0, q8_0_pair, dot2_q8_0_vnni)} FOLIO_AVX512
    float vec_dot_q8_0_plain(int64_t n, const void* w,
                             const void* x){FOLIO_DOT2_LOOP(BlockQ8_0, q8_0_pair, dot2_q8_0_plain)} FOLIO_AVX512_VNNI
    float vec_dot_q4_0_vnni(int64_t n, const void* w,
                            const void* x){FOLIO_DOT2_LOOP(BlockQ4_0, nibbles2, dot2_q4_0_vnni)} FOLIO_AVX512
    float vec_dot_q4_0_plain(int64_t n, const void* w, const void* x) {
  FOLIO_DOT2_LOOP(BlockQ4_0, nibbles2, dot2_q4_0_plain)
}

#undef FOLIO_DOT2_LOOP
#undef FOLIO_DOT2_STEP

// ---------------------------------------------------------------------------------------------------
// Q4_K and Q6_K against Q8_K: 64 quants per vector, vpmaddubsw pairs, vpmaddwd against the sub-block
// scales spread with vpermw. (VNNI would not save an instruction here: the per-sub-block scale needs a
// 16-bit multiply either way.)

// int16 lane i of the result = int16 element idx[i] of the low 128 bits of `table`.
FOLIO_AVX512 __m512i spread16(__m512i table, __m512i idx) { return _mm512_permutexvar_epi16(idx, table); }

FOLIO_AVX512 float vec_dot_q4_k(int64_t n, const void* w, const void* x) {
  const BlockQ4_K* a = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  const __m512i m4 = _mm512_set1_epi8(15);
  __m512 acc = _mm512_setzero_ps();
  __m256 macc = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    uint32_t packed[4];
    unpack_scales_k4_words(a[ib].scales, packed);
    const __m256i sm = _mm256_cvtepu8_epi16(load128(packed));  // int16: lanes 0-7 scales, 8-15 mins
    const __m128i mn = _mm256_extracti128_si256(sm, 1);
    const __m256i mn2 = _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn));
    const __m256i msum = _mm256_madd_epi16(load256(b[ib].bsums), mn2);
    const __m512i sc = _mm512_castsi256_si512(sm);
    __m512i isum = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      // chunk c: sub-block 2c in the low nibbles (vector bytes 0-31), 2c+1 in the high ones (32-63)
      const __m512i v = _mm512_broadcast_i64x4(load256(a[ib].qs + 32 * c));
      const __m512i q = _mm512_and_si512(_mm512_mask_blend_epi64(0xf0, v, _mm512_srli_epi16(v, 4)), m4);
      const __m512i p = _mm512_maddubs_epi16(q, load512(b[ib].qs + 64 * c));
      const __m512i idx =
          _mm512_mask_blend_epi16(0xffff0000u, _mm512_set1_epi16(short(2 * c)), _mm512_set1_epi16(short(2 * c + 1)));
      isum = _mm512_add_epi32(isum, _mm512_madd_epi16(p, spread16(sc, idx)));
    }
    acc = _mm512_fmadd_ps(_mm512_set1_ps(h2f(a[ib].d) * b[ib].d), _mm512_cvtepi32_ps(isum), acc);
    macc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[ib].dmin) * b[ib].d), _mm256_cvtepi32_ps(msum), macc);
  }
  return hsum(acc) - avx2::hsum(macc);
}

FOLIO_AVX512 float vec_dot_q6_k(int64_t n, const void* w, const void* x) {
  const BlockQ6_K* a = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(3);
  // vpsrlvw counts: the low 256 bits take one pair of high bits, the upper 256 bits the next pair
  const __m512i shift_a = _mm512_mask_blend_epi16(0xffff0000u, _mm512_set1_epi16(0), _mm512_set1_epi16(2));
  const __m512i shift_b = _mm512_mask_blend_epi16(0xffff0000u, _mm512_set1_epi16(4), _mm512_set1_epi16(6));
  // int16 lane i of vector k takes the scale of group 4k + i/8
  const __m512i lane_group =
      _mm512_srli_epi16(_mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12,
                                         11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                        3);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const __m256i sc16 = _mm256_cvtepi8_epi16(load128(a[ib].scales));
    const __m256i bias = _mm256_madd_epi16(load256(b[ib].bsums), sc16);  // Σ sc_g · bsums[g], pairwise
    const __m512i sc = _mm512_castsi256_si512(sc16);
    __m512i isum = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      const __m512i l = load512(a[ib].ql + 64 * h);
      const __m512i hb = _mm512_broadcast_i64x4(load256(a[ib].qh + 32 * h));
      // elements 128h + 0..63, then 128h + 64..127 (layout in blocks.h)
      const __m512i qa = _mm512_or_si512(_mm512_and_si512(l, m4),
                                         _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, shift_a), m2), 4));
      const __m512i qb = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
                                         _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, shift_b), m2), 4));
      const int k = 2 * h;
      const __m512i pa = _mm512_maddubs_epi16(qa, load512(b[ib].qs + 64 * k));
      const __m512i pb = _mm512_maddubs_epi16(qb, load512(b[ib].qs + 64 * (k + 1)));
      const __m512i sa = spread16(sc, _mm512_add_epi16(lane_group, _mm512_set1_epi16(short(4 * k))));
      const __m512i sb = spread16(sc, _mm512_add_epi16(lane_group, _mm512_set1_epi16(short(4 * k + 4))));
      isum = _mm512_add_epi32(isum, _mm512_add_epi32(_mm512_madd_epi16(pa, sa), _mm512_madd_epi16(pb, sb)));
    }
    __m256i total = _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
    total = _mm256_sub_epi32(total, _mm256_slli_epi32(bias, 5));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[ib].d) * b[ib].d), _mm256_cvtepi32_ps(total), acc);
  }
  return avx2::hsum(acc);
}

}  // namespace
}  // namespace avx512

void add_avx512_kernels(KernelTable& t, bool vnni) {
  using namespace avx512;
  slot(t, TensorType::F32).vec_dot = vec_dot_f32;
  slot(t, TensorType::F16) = {dequantize_f16, quantize_f16, vec_dot_f16};
  slot(t, TensorType::BF16).vec_dot = vec_dot_bf16;
  slot(t, TensorType::Q8_0).vec_dot = vnni ? vec_dot_q8_0_vnni : vec_dot_q8_0_plain;
  slot(t, TensorType::Q4_0).vec_dot = vnni ? vec_dot_q4_0_vnni : vec_dot_q4_0_plain;
  slot(t, TensorType::Q4_K).vec_dot = vec_dot_q4_k;
  slot(t, TensorType::Q6_K).vec_dot = vec_dot_q6_k;
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_X86
