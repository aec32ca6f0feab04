// AVX2 (+FMA, F16C) dot products of Q2_K, Q3_K, IQ4_XS with Q8_K and IQ4_NL with Q8_0. Integer sums per
// block are exact (vpmaddubsw pairs, then vpmaddwd against the group scales), so they differ from the
// scalar reference (quant-scalar.cc) by float rounding only. Dequantization stays scalar (it only serves
// embedding rows).
//
// Vector (h, j) of a Q2_K/Q3_K super-block holds elements 128h + 32j .. +31: bits 2j, 2j+1 of the 32 bytes
// qs[32h ..], which are groups 8h + 2j (low 128-bit lane) and 8h + 2j + 1 (high lane), the same pairing
// as Q6_K's vectors (quant-avx2-k.cc), so the group scales are broadcast per lane the same way.
#include "quant/kernels.h"

#if FOLIO_QUANT_X86

#include <cstring>

#include "quant/avx2-common.h"
#include "quant/blocks.h"

namespace folio::quant {
namespace avx2 {
namespace {

// Control for vpshufb: every 16-bit lane takes int16 element `i` of its 128-bit lane.
FOLIO_AVX2 __m128i pick16(int i) { return _mm_set1_epi16(short((2 * i) | ((2 * i + 1) << 8))); }

// Σ_g sc_g Σ_{i in g} u_i x_i over a super-block: u[v] the 8 vectors of unsigned quants (< 128) in element
// order, sc16 the 16 group scales as int16 (lane g).
FOLIO_AVX2_INLINE __m256i scaled_sums16(const __m256i (&u)[8], __m256i sc16, const int8_t* qx) {
  const __m256i sc_lo = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sc16));
  const __m256i sc_hi = _mm256_broadcastsi128_si256(_mm256_extracti128_si256(sc16, 1));
  __m256i isum = _mm256_setzero_si256();
  for (int v = 0; v < 8; ++v) {
    const int g = (2 * v) & 7;
    const __m256i s = _mm256_shuffle_epi8(v < 4 ? sc_lo : sc_hi, _mm256_set_m128i(pick16(g + 1), pick16(g)));
    const __m256i p = _mm256_maddubs_epi16(u[v], load256(qx + 32 * v));  // pairs <= 2 * 7 * 127
    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, s));
  }
  return isum;
}

// The 2-bit fields of qs[64] as 8 vectors of bytes 0..3 in element order.
FOLIO_AVX2_INLINE void two_bit_values(const uint8_t* qs, __m256i (&u)[8]) {
  const __m256i m3 = _mm256_set1_epi8(3);
  for (int h = 0; h < 2; ++h) {
    const __m256i q = load256(qs + 32 * h);
    u[4 * h + 0] = _mm256_and_si256(q, m3);
    u[4 * h + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 2), m3);
    u[4 * h + 2] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m3);
    u[4 * h + 3] = _mm256_and_si256(_mm256_srli_epi16(q, 6), m3);
  }
}

// Q2_K · Q8_K: d dx Σ_g sc_g Σ q qx - dmin dx Σ_g m_g bsums[g].
FOLIO_AVX2 float vec_dot_q2_k(int64_t n, const void* w, const void* x) {
  const BlockQ2_K* a = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  const __m128i m4 = _mm_set1_epi8(15);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    __m256i u[8];
    two_bit_values(a[ib].qs, u);
    const __m128i s = load128(a[ib].scales);
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(s, m4));
    const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m4));
    const __m256i isum = scaled_sums16(u, sc16, b[ib].qs);
    const __m256i msum = _mm256_madd_epi16(load256(b[ib].bsums), mn16);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[ib].d) * b[ib].d), _mm256_cvtepi32_ps(isum), acc);
    acc = _mm256_fnmadd_ps(_mm256_set1_ps(h2f(a[ib].dmin) * b[ib].d), _mm256_cvtepi32_ps(msum), acc);
  }
  return hsum(acc);
}

// The 16 six-bit scales of a Q3_K block minus 32, as int16 (layout in blocks.h, q3_k_scale): the low
// nibbles of bytes 0-7 then their high nibbles give the low 4 bits of scales 0-15; byte 8 + g % 4
// shifted right by 2 (g / 4) gives the high 2 bits, which four shifted copies of bytes 8-11 line up.
FOLIO_AVX2_INLINE __m256i q3_k_scales16(const uint8_t* s) {
  // 8 + 4 bytes into one register: a 16-byte load would read past the last block of a row, and a copy
  // through memory would stall on store forwarding
  uint32_t c4;
  std::memcpy(&c4, s + 8, 4);
  const __m128i v =
      _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s)), _mm_cvtsi32_si128(int(c4)));
  const __m128i m4 = _mm_set1_epi8(15);
  const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(v, m4), _mm_and_si128(_mm_srli_epi16(v, 4), m4));
  const __m128i c = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 2, 2, 2));
  const __m128i hi = _mm_and_si128(_mm_srlv_epi32(c, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
  const __m128i sc = _mm_or_si128(lo, _mm_slli_epi16(hi, 4));
  return _mm256_sub_epi16(_mm256_cvtepu8_epi16(sc), _mm256_set1_epi16(32));
}

// Q3_K · Q8_K with u = q + 4 in 0..7 (the low bits | the hmask bit << 2): Σ sc Σ q qx = Σ sc Σ u qx - 4 Σ
// sc bsums.
FOLIO_AVX2 float vec_dot_q3_k(int64_t n, const void* w, const void* x) {
  const BlockQ3_K* a = static_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  const __m256i one = _mm256_set1_epi8(1);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    __m256i u[8];
    two_bit_values(a[ib].qs, u);
    const __m256i hm = load256(a[ib].hmask);
    for (int v = 0; v < 8; ++v) {
      // bit v of hmask[l] is the high bit of element 32v + l (v = 4h + j)
      const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, v), one);
      u[v] = _mm256_or_si256(u[v], _mm256_slli_epi16(hb, 2));
    }
    const __m256i sc16 = q3_k_scales16(a[ib].scales);
    __m256i isum = scaled_sums16(u, sc16, b[ib].qs);
    const __m256i bias = _mm256_madd_epi16(load256(b[ib].bsums), sc16);
    isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(bias, 2));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[ib].d) * b[ib].d), _mm256_cvtepi32_ps(isum), acc);
  }
  return hsum(acc);
}

// The code book (blocks.h) in both 128-bit lanes, for vpshufb lookups of 4-bit indices.
FOLIO_AVX2 __m256i iq4nl_table() { return _mm256_broadcastsi128_si256(load128(kIq4nlValues)); }

// Pairwise sums of v·x for 32 signed code book values and 32 int8 activations (-127..127): |v| times x
// with v's sign (|v| <= 127, so pairs stay within int16).
FOLIO_AVX2_INLINE __m256i signed_pairs(__m256i v, __m256i x) {
  return _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(x, v));
}

// IQ4_NL · Q8_0: per block d dx Σ v qx.
FOLIO_AVX2 float vec_dot_iq4_nl(int64_t n, const void* w, const void* x) {
  const BlockIQ4_NL* a = static_cast<const BlockIQ4_NL*>(w);
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);
  const __m256i table = iq4nl_table(), ones = _mm256_set1_epi16(1);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  const int64_t nb = n / QK;
  int64_t ib = 0;
  for (; ib + 1 < nb; ib += 2) {
    const __m256i v0 = _mm256_shuffle_epi8(table, nibbles16(a[ib].qs));
    const __m256i v1 = _mm256_shuffle_epi8(table, nibbles16(a[ib + 1].qs));
    const __m256i s0 = _mm256_madd_epi16(signed_pairs(v0, load256(b[ib].qs)), ones);
    const __m256i s1 = _mm256_madd_epi16(signed_pairs(v1, load256(b[ib + 1].qs)), ones);
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[ib].d) * h2f(b[ib].d)), _mm256_cvtepi32_ps(s0), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[ib + 1].d) * h2f(b[ib + 1].d)), _mm256_cvtepi32_ps(s1), acc1);
  }
  if (ib < nb) {
    const __m256i v0 = _mm256_shuffle_epi8(table, nibbles16(a[ib].qs));
    const __m256i s0 = _mm256_madd_epi16(signed_pairs(v0, load256(b[ib].qs)), ones);
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[ib].d) * h2f(b[ib].d)), _mm256_cvtepi32_ps(s0), acc0);
  }
  return hsum(_mm256_add_ps(acc0, acc1));
}

// IQ4_XS · Q8_K: d dx Σ_j (ls_j - 32) Σ v qx; pair sums <= 2·127·127, times |ls - 32| <= 32 in int32.
FOLIO_AVX2 float vec_dot_iq4_xs(int64_t n, const void* w, const void* x) {
  const BlockIQ4_XS* a = static_cast<const BlockIQ4_XS*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  const __m256i table = iq4nl_table();
  __m256 acc = _mm256_setzero_ps();
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    __m256i isum = _mm256_setzero_si256();
    for (int j = 0; j < QK_K / QK; ++j) {
      const __m256i v = _mm256_shuffle_epi8(table, nibbles16(a[ib].qs + 16 * j));
      const __m256i p = signed_pairs(v, load256(b[ib].qs + QK * j));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, _mm256_set1_epi16(short(iq4_xs_scale(a[ib], j) - 32))));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(a[ib].d) * b[ib].d), _mm256_cvtepi32_ps(isum), acc);
  }
  return hsum(acc);
}

}  // namespace
}  // namespace avx2

void add_avx2_lowbit_kernels(KernelTable& t) {
  using namespace avx2;
  slot(t, TensorType::Q2_K).vec_dot = vec_dot_q2_k;
  slot(t, TensorType::Q3_K).vec_dot = vec_dot_q3_k;
  slot(t, TensorType::IQ4_NL).vec_dot = vec_dot_iq4_nl;
  slot(t, TensorType::IQ4_XS).vec_dot = vec_dot_iq4_xs;
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_X86
