// Helpers shared by the AVX2 kernel files (quant-avx2*.cc); included only there, after the x86 check.
// Every function carries the target attribute itself (no file-wide -mavx2), so nothing here can leak
// AVX2 code into baseline paths.
#pragma once
#include <immintrin.h>

#include <cstdint>

#define FOLIO_AVX2 __attribute__((target("avx2,fma,f16c")))
// For helpers called once per block from a kernel's loop: left to itself GCC calls them out of line
// (with vzeroupper and the quants through the stack), which cost the K-quant dot products 5–20%.
#define FOLIO_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

namespace folio::quant::avx2 {

FOLIO_AVX2 static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

FOLIO_AVX2 static inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

FOLIO_AVX2 static inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

FOLIO_AVX2 static inline float hmin(__m256 v) {
  __m128 s = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_min_ps(s, _mm_movehl_ps(s, s));
  s = _mm_min_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// fp16 <-> f32 with F16C: exact, and round-to-nearest-even like f32_to_fp16 in core/fp16.h.
FOLIO_AVX2 static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }
FOLIO_AVX2 static inline uint16_t f2h(float f) { return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }

FOLIO_AVX2 static inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
FOLIO_AVX2 static inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// 16 bytes of packed nibbles -> 32 bytes: the low nibbles (elements 0-15) then the high ones (16-31).
FOLIO_AVX2 static inline __m256i nibbles16(const uint8_t* qs) {
  const __m128i q = load128(qs), m4 = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
}

// Byte i = 0xFF where bit i of `bits` is set, else 0.
FOLIO_AVX2 static inline __m256i bits_to_bytes(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(int(bits)),
                                             _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                                              2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i sel = _mm256_set1_epi64x(0x8040201008040201LL);
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel);
}

// y[0..32) = d * q for 32 signed bytes.
FOLIO_AVX2 static inline void store_scaled_i8(__m256i q, __m256 d, float* y) {
  const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  _mm256_storeu_ps(y + 0, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), d));
  _mm256_storeu_ps(y + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), d));
  _mm256_storeu_ps(y + 16, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), d));
  _mm256_storeu_ps(y + 24, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), d));
}

// y[0..32) = d * q + m for 32 unsigned bytes. Every q * d is exact here (q < 64, d an fp16 times at most
// a 6-bit integer), so the fused multiply-add rounds exactly like the scalar multiply-then-add.
FOLIO_AVX2 static inline void store_affine_u8(__m256i q, __m256 d, __m256 m, float* y) {
  const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  _mm256_storeu_ps(y + 0, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo)), d, m));
  _mm256_storeu_ps(y + 8, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8))), d, m));
  _mm256_storeu_ps(y + 16, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi)), d, m));
  _mm256_storeu_ps(y + 24, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8))), d, m));
}

// A K-quant super-block's 12 packed 6-bit scales and mins (layout in blocks.h) as int16: lanes 0-7 the
// scales, 8-15 the mins, unpacked in registers (no round trip through memory, whose 4-byte stores a
// 16-byte load could not forward). Reads 16 bytes at s: the 12 and 4 bytes of what follows them.
FOLIO_AVX2 static inline __m256i k4_scales16(const uint8_t* s) {
  const __m128i v = load128(s);                                     // words a, b, c (+ junk)
  const __m128i t = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0));  // a c b c
  const __m128i u = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0));  // a a b b
  const __m128i lo6 = _mm_and_si128(t, _mm_setr_epi32(0x3f3f3f3f, 0, 0x3f3f3f3f, 0));
  const __m128i hi2 = _mm_and_si128(_mm_srli_epi32(u, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  const __m128i lo4 =
      _mm_and_si128(_mm_srlv_epi32(t, _mm_setr_epi32(0, 0, 0, 4)), _mm_setr_epi32(0, 0x0f0f0f0f, 0, 0x0f0f0f0f));
  return _mm256_cvtepu8_epi16(_mm_or_si128(_mm_or_si128(lo6, hi2), lo4));
}

}  // namespace folio::quant::avx2
