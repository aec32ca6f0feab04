// AVX2 (+FMA, F16C) kernels for the K-quants Q4_K, Q5_K, Q6_K: dequantize and dot products with Q8_K.
// Per super-block the integer sums are exact (int32 lanes: vpmaddubsw pairs, then vpmaddwd against the
// sub-block scales); the float scaling is one FMA per super-block into a float accumulator vector.
#include "quant/kernels.h"

#if FOLIO_QUANT_X86

#include "quant/avx2-common.h"
#include "quant/blocks.h"

namespace folio::quant {
namespace avx2 {
namespace {

// Control for vpshufb: every 16-bit lane takes int16 element `i` of its 128-bit lane.
FOLIO_AVX2 __m128i pick16(int i) { return _mm_set1_epi16(short((2 * i) | ((2 * i + 1) << 8))); }

// ---------------------------------------------------------------------------------------------------
// Q4_K / Q5_K

// q (32 bytes of unsigned quants) -> y[0..32) = d * q - m; the product is exact (store_affine_u8).
FOLIO_AVX2_INLINE void dequantize_k4(const __m256i (&q)[8], const uint8_t* scales, float d, float dmin, float* y) {
  uint8_t sc[8], mn[8];
  unpack_scales_k4(scales, sc, mn);
  for (int j = 0; j < 8; ++j) {
    store_affine_u8(q[j], _mm256_set1_ps(d * float(sc[j])), _mm256_set1_ps(-(dmin * float(mn[j]))), y + 32 * j);
  }
}

FOLIO_AVX2 void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  const BlockQ4_K* b = static_cast<const BlockQ4_K*>(src);
  const __m256i m4 = _mm256_set1_epi8(15);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    __m256i q[8];
    for (int c = 0; c < 4; ++c) {
      const __m256i v = load256(b[ib].qs + 32 * c);
      q[2 * c] = _mm256_and_si256(v, m4);
      q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
    dequantize_k4(q, b[ib].scales, h2f(b[ib].d), h2f(b[ib].dmin), dst + ib * QK_K);
  }
}

// The 8 vectors of 32 five-bit quants of a Q5_K block (vector j = sub-block j).
FOLIO_AVX2_INLINE void q5_k_values(const BlockQ5_K& b, __m256i (&q)[8]) {
  const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
  __m256i hb = load256(b.qh);
  for (int c = 0; c < 4; ++c) {
    const __m256i v = load256(b.qs + 32 * c);
    // bit 2c of qh[l] -> bit 4 of element 64c + l; bit 2c+1 -> element 64c + 32 + l
    const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, one), 4);
    const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), one), 4);
    q[2 * c] = _mm256_or_si256(_mm256_and_si256(v, m4), h0);
    q[2 * c + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), h1);
    hb = _mm256_srli_epi16(hb, 2);
  }
}

FOLIO_AVX2 void dequantize_q5_k(const void* src, float* dst, int64_t n) {
  const BlockQ5_K* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    __m256i q[8];
    q5_k_values(b[ib], q);
    dequantize_k4(q, b[ib].scales, h2f(b[ib].d), h2f(b[ib].dmin), dst + ib * QK_K);
  }
}

// One super-block of a Q4_K/Q5_K dot: acc += d·dx·Σ_j sc_j Σ q·qx - dmin·dx·Σ_j m_j Σ qx.
FOLIO_AVX2_INLINE __m256 step_k4(const __m256i (&q)[8], const uint8_t* scales, uint16_t d, uint16_t dmin,
                                 const BlockQ8_K& x, __m256 acc) {
  uint32_t packed[4];
  unpack_scales_k4_words(scales, packed);
  const __m256i sm = _mm256_cvtepu8_epi16(load128(packed));  // int16: lanes 0-7 scales, 8-15 mins
  const __m256i sc = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
  const __m128i mn = _mm256_extracti128_si256(sm, 1);
  // Σ_j m_j (bsums[2j] + bsums[2j+1]): each min twice, against the 16 group sums
  const __m256i mn2 = _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn));
  const __m256i msum = _mm256_madd_epi16(load256(x.bsums), mn2);
  __m256i isum = _mm256_setzero_si256();
  for (int j = 0; j < 8; ++j) {
    const __m256i p = _mm256_maddubs_epi16(q[j], load256(x.qs + 32 * j));  // pairs <= 2 * 31 * 128
    const __m256i s = _mm256_shuffle_epi8(sc, _mm256_broadcastsi128_si256(pick16(j)));
    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, s));
  }
  acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(d) * x.d), _mm256_cvtepi32_ps(isum), acc);
  return _mm256_fnmadd_ps(_mm256_set1_ps(h2f(dmin) * x.d), _mm256_cvtepi32_ps(msum), acc);
}

FOLIO_AVX2 float vec_dot_q4_k(int64_t n, const void* w, const void* x) {
  const BlockQ4_K* a = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  const __m256i m4 = _mm256_set1_epi8(15);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    __m256i q[8];
    for (int c = 0; c < 4; ++c) {
      const __m256i v = load256(a[ib].qs + 32 * c);
      q[2 * c] = _mm256_and_si256(v, m4);
      q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
    acc = step_k4(q, a[ib].scales, a[ib].d, a[ib].dmin, b[ib], acc);
  }
  return hsum(acc);
}

FOLIO_AVX2 float vec_dot_q5_k(int64_t n, const void* w, const void* x) {
  const BlockQ5_K* a = static_cast<const BlockQ5_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    __m256i q[8];
    q5_k_values(a[ib], q);
    acc = step_k4(q, a[ib].scales, a[ib].d, a[ib].dmin, b[ib], acc);
  }
  return hsum(acc);
}

// ---------------------------------------------------------------------------------------------------
// Q6_K

// The 8 vectors of 32 unsigned six-bit quants (0..63) of a Q6_K block, in element order. The two high
// bits of vector 4h + k sit at bits 2k, 2k + 1 of qh's bytes: one 16-bit shift by 4 − 2k moves them to
// bits 4-5 of their own byte (no bit that reaches bits 4-5 comes from the neighbouring byte), one mask
// keeps them.
FOLIO_AVX2_INLINE void q6_k_values(const BlockQ6_K& b, __m256i (&q)[8]) {
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  for (int h = 0; h < 2; ++h) {
    const __m256i l0 = load256(b.ql + 64 * h), l1 = load256(b.ql + 64 * h + 32);
    const __m256i hi = load256(b.qh + 32 * h);
    q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(hi, 4), m30));
    q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(hi, 2), m30));
    q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hi, m30));
    q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_and_si256(_mm256_srli_epi16(hi, 2), m30));
  }
}

FOLIO_AVX2 void dequantize_q6_k(const void* src, float* dst, int64_t n) {
  const BlockQ6_K* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    __m256i q[8];
    q6_k_values(b[ib], q);
    const float d = h2f(b[ib].d);
    float* y = dst + ib * QK_K;
    for (int j = 0; j < 8; ++j) {
      // Vector j covers groups 2j and 2j+1; each group's scale d·sc is rounded once, as in the reference.
      const __m256i v = _mm256_sub_epi8(q[j], _mm256_set1_epi8(32));
      const __m128i lo = _mm256_castsi256_si128(v), hi = _mm256_extracti128_si256(v, 1);
      const __m256 d0 = _mm256_set1_ps(d * float(b[ib].scales[2 * j]));
      const __m256 d1 = _mm256_set1_ps(d * float(b[ib].scales[2 * j + 1]));
      _mm256_storeu_ps(y + 32 * j + 0, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), d0));
      _mm256_storeu_ps(y + 32 * j + 8,
                       _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), d0));
      _mm256_storeu_ps(y + 32 * j + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), d1));
      _mm256_storeu_ps(y + 32 * j + 24,
                       _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), d1));
    }
  }
}

// Σ sc_g Σ (q - 32)·qx = Σ sc_g Σ q·qx - 32 Σ sc_g bsums[g]: the unsigned quants go into vpmaddubsw.
FOLIO_AVX2 float vec_dot_q6_k(int64_t n, const void* w, const void* x) {
  const BlockQ6_K* a = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    __m256i q[8];
    q6_k_values(a[ib], q);
    const __m256i sc16 = _mm256_cvtepi8_epi16(load128(a[ib].scales));  // int16 scale per group
    const __m256i bias = _mm256_madd_epi16(load256(b[ib].bsums), sc16);
    // Per 128-bit lane: the 8 scales of one half; vector j needs group 2j in its low lane, 2j+1 in the high.
    const __m256i sc_lo = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sc16));
    const __m256i sc_hi = _mm256_broadcastsi128_si256(_mm256_extracti128_si256(sc16, 1));
    __m256i isum = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const int g = (2 * j) & 7;  // group index within its half of eight scales
      const __m256i s = _mm256_shuffle_epi8(j < 4 ? sc_lo : sc_hi, _mm256_set_m128i(pick16(g + 1), pick16(g)));
      const __m256i p = _mm256_maddubs_epi16(q[j], load256(b[ib].qs + 32 * j));  // pairs <= 2 * 63 * 128
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, s));
    }
    isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(bias, 5));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[ib].d) * b[ib].d), _mm256_cvtepi32_ps(isum), acc);
  }
  return hsum(acc);
}

}  // namespace
}  // namespace avx2

void add_avx2_k_kernels(KernelTable& t) {
  using namespace avx2;
  slot(t, TensorType::Q4_K).dequantize_row = dequantize_q4_k;
  slot(t, TensorType::Q4_K).vec_dot = vec_dot_q4_k;
  slot(t, TensorType::Q5_K).dequantize_row = dequantize_q5_k;
  slot(t, TensorType::Q5_K).vec_dot = vec_dot_q5_k;
  slot(t, TensorType::Q6_K).dequantize_row = dequantize_q6_k;
  slot(t, TensorType::Q6_K).vec_dot = vec_dot_q6_k;
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_X86
