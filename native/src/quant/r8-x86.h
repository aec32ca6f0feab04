// Helpers shared by the x86 kernels of the repacked layouts (gemm-r8-x86.cc, gemm-q8r8-x86.cc,
// gemm-unpacked-x86.cc); included only there, after the x86 check.
#pragma once
// GCC 12's AVX-512 headers (_mm512_cvtepi32_ps's undefined source) trip these in the 512-bit kernels of
// the files that include this one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "quant/avx2-common.h"
#include "quant/blocks.h"

namespace folio::quant::r8x86 {

using avx2::load128;
using avx2::load256;

FOLIO_AVX2_INLINE void store256(void* p, __m256i v) { _mm256_store_si256(static_cast<__m256i*>(p), v); }

// 4 bytes as one 32-bit value (4 activation quants, or a pair of int16 sums).
inline int32_t bytes4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 4 activation bytes in every 32-bit lane.
FOLIO_AVX2_INLINE __m256i broadcast4(const int8_t* p) { return _mm256_set1_epi32(bytes4(p)); }

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

// 32 of Q3_K_R8's scales as signed bytes sc − 32: the low 4 bits from the low nibbles of lo4, the high 2
// from bits 4-5 of hi2.
FOLIO_AVX2_INLINE __m256i q3_scales(__m256i lo4, __m256i hi2) {
  const __m256i v =
      _mm256_or_si256(_mm256_and_si256(lo4, _mm256_set1_epi8(15)), _mm256_and_si256(hi2, _mm256_set1_epi8(0x30)));
  return _mm256_sub_epi8(v, _mm256_set1_epi8(32));
}

// The 3-bit quants (0..7) of one quad of group 8o + 4P + I for the 8 rows: the low 2 bits from a lo
// vector (bits 2I, 2I + 1), the high bit from a hi vector (bit 4P + I), moved to bit 2.
template <int I, int P>
FOLIO_AVX2_INLINE __m256i q3_quad(__m256i lo2, __m256i hi1) {
  constexpr int J = 4 * P + I;
  const __m256i lo = _mm256_and_si256(I == 0 ? lo2 : _mm256_srli_epi16(lo2, 2 * I), _mm256_set1_epi8(3));
  const __m256i hi = J < 2 ? _mm256_slli_epi16(hi1, 2 - J) : J == 2 ? hi1 : _mm256_srli_epi16(hi1, J - 2);
  return _mm256_or_si256(lo, _mm256_and_si256(hi, _mm256_set1_epi8(4)));
}

// Q3_K_R8's 128 scales as signed bytes sc − 32, index 8j + r (blocks.h).
FOLIO_AVX2_INLINE void q3_k_r8_scales(const BlockQ3_Kx8& g, int8_t* sc) {
  const __m256i l0 = load256(g.sc_lo), l1 = load256(g.sc_lo + 32), h = load256(g.sc_hi);
  store256(sc, q3_scales(l0, _mm256_slli_epi16(h, 4)));
  store256(sc + 32, q3_scales(l1, _mm256_slli_epi16(h, 2)));
  store256(sc + 64, q3_scales(_mm256_srli_epi16(l0, 4), h));
  store256(sc + 96, q3_scales(_mm256_srli_epi16(l1, 4), _mm256_srli_epi16(h, 2)));
}

// IQ4_XS_R8's 64 scales as signed bytes ls − 32, index 8s + r (blocks.h).
FOLIO_AVX2_INLINE void iq4_xs_r8_scales(const BlockIQ4_XSx8& g, int8_t* sc) {
  const __m256i l = load256(g.sc_lo);
  const __m128i h = load128(g.sc_hi);
  const __m256i h01 = _mm256_set_m128i(_mm_srli_epi16(h, 2), h);
  const __m256i h23 = _mm256_set_m128i(_mm_srli_epi16(h, 6), _mm_srli_epi16(h, 4));
  store256(sc, q3_scales(l, _mm256_slli_epi16(h01, 4)));
  store256(sc + 32, q3_scales(_mm256_srli_epi16(l, 4), _mm256_slli_epi16(h23, 4)));
}

// IQ4_XS's code book (kIq4nlValues) in both lanes, for vpshufb; Biased: + 128, as unsigned bytes.
template <bool Biased>
FOLIO_AVX2_INLINE __m256i iq4_book() {
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
  return Biased ? _mm256_xor_si256(v, _mm256_set1_epi8(-128)) : v;
}
// The next block of rows, read into L2 while the current one computes: the blocked products unpack each
// block of rows once per call, and that unpacking would otherwise wait for memory with no arithmetic to
// overlap. step() prefetches the next share of the bytes, spread over `steps` calls (one per token pass).
class NextRows {
 public:
  NextRows(const uint8_t* begin, const uint8_t* end, int64_t steps)
      : p_(begin),
        end_(end),
        lines_per_step_(((end > begin ? end - begin : 0) / 64 + steps) / std::max<int64_t>(steps, 1)) {}
  void step() {
    for (int64_t i = 0; i < lines_per_step_ && p_ < end_; ++i, p_ += 64) __builtin_prefetch(p_, 0, 2);
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  int64_t lines_per_step_;
};

}  // namespace folio::quant::r8x86
