// Helpers shared by the x86 kernels of the repacked layouts (gemm-r8-x86.cc, gemm-q8r8-x86.cc,
// gemm-unpacked-x86.cc); included only there, after the x86 check.
#pragma once
#include <cstring>

#include "quant/avx2-common.h"
#include "quant/blocks.h"

namespace folio::quant::r8x86 {

using avx2::load128;
using avx2::load256;

FOLIO_AVX2_INLINE void store256(void* p, __m256i v) { _mm256_store_si256(static_cast<__m256i*>(p), v); }

// 4 activation bytes in every 32-bit lane.
FOLIO_AVX2_INLINE __m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// The 6-bit scales and mins of a Q4_K_R8 block to bytes, in the orders of blocks.h: row r's scale of
// sub-block s at sc[8s + r]; mins in pairs of sub-blocks, mn[16p + 2r + i] for sub-block 2p + i.
FOLIO_AVX2_INLINE void q4_k_r8_scales(const BlockQ4_Kx8& g, uint8_t* sc, uint8_t* mn) {
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  const __m256i l0 = load256(g.sm_lo), l1 = load256(g.sm_lo + 32), h = load256(g.sm_hi);
  store256(sc, _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30)));
  store256(sc + 32, _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30)));
  store256(mn, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m30)));
  store256(mn + 32, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                    _mm256_and_si256(_mm256_srli_epi16(h, 2), m30)));
}

// The 6-bit quants (0..63) of one quad of group 4h + I for the 8 rows: the low 4 bits from a lo vector
// (nibble I % 2), the high 2 from a hi vector (bits 2I, 2I + 1), moved to bits 4-5.
template <int I>
FOLIO_AVX2_INLINE __m256i q6_quad(__m256i lo4, __m256i hi2) {
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  const __m256i lo = I % 2 ? _mm256_and_si256(_mm256_srli_epi16(lo4, 4), m4) : _mm256_and_si256(lo4, m4);
  const __m256i hi = I == 0   ? _mm256_slli_epi16(hi2, 4)
                     : I == 1 ? _mm256_slli_epi16(hi2, 2)
                     : I == 2 ? hi2
                              : _mm256_srli_epi16(hi2, 2);
  return _mm256_or_si256(lo, _mm256_and_si256(hi, m30));
}

}  // namespace folio::quant::r8x86
