// x86 kernels of Q4_K_R8, Q6_K_R8, Q3_K_R8, Q2_K_R8 and IQ4_XS_R8 (repack.h, layouts in blocks.h): the 8 rows of a
// group in the 8 32-bit lanes of one 256-bit register. Per 32-byte vector of weights (4 elements of each row): masks
// and shifts unpack it, and each token's 4 matching activation bytes are broadcast to every lane and multiplied in
// (vpmaddubsw, or vpdpbusd). A sub-block's (group's) products are summed per lane and multiplied by the 8 rows' scales
// once; d, dmin and the offset terms are applied per super-block with 8-wide arithmetic; 8 outputs are stored at the
// end, no horizontal sums.
//
// The same kernel is the blocked product of Q3_K_R8, Q2_K_R8 and IQ4_XS_R8, and of every layout with plain
// AVX2: a group's weights (9 KiB of Q4_K_R8 for 2048 columns) stay in L1 while every token of the block
// passes, three at a time (333 against 313 GFLOP/s for the Q4_K tiles on panels, gemm-avx2.cc, two cores,
// Q4_K 8192×2048, 512 tokens). With VNNI, Q4_K_R8 and Q6_K_R8 have faster ones over weights unpacked once
// per call (gemm-unpacked-x86.cc).
#include "quant/kernels.h"

#if FOLIO_QUANT_X86

#include <cstring>

#include "quant/avx2-common.h"
#include "quant/blocks.h"
#include "quant/gemm.h"
#include "quant/r8-x86.h"

namespace folio::quant {
namespace avx2r8 {
namespace {

using namespace r8x86;  // (and avx2::load128, load256)

// The products of one sub-block, per lane. With vpmaddubsw in 16-bit lanes: each is at most 2·15·128 =
// 3840 in magnitude, and a sub-block adds 8 of them (30720), which fits; then isum += the per-row sums ×
// the rows' scales (bytes at sc), each scale twice, against both halves of its row's lane. With vpdpbusd
// in 32-bit lanes.
FOLIO_AVX2_INLINE __m256i dot_madd(__m256i acc, __m256i q, __m256i x) {
  return _mm256_add_epi16(acc, _mm256_maddubs_epi16(q, x));
}
FOLIO_AVX2_INLINE __m256i scale_madd(__m256i isum, __m256i p, const uint8_t* sc) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc));
  return _mm256_add_epi32(isum, _mm256_madd_epi16(p, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(b, b))));
}
#define FOLIO_AVX512_VNNI_INLINE \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni"), always_inline)) inline
FOLIO_AVX_VNNI_INLINE __m256i dot_avx_vnni(__m256i acc, __m256i q, __m256i x) { return FOLIO_DPBUSD256(acc, q, x); }
FOLIO_AVX512_VNNI_INLINE __m256i dot_avx512_vnni(__m256i acc, __m256i q, __m256i x) {
  return _mm256_dpbusd_epi32(acc, q, x);
}
FOLIO_AVX2_INLINE __m256i scale_i32(__m256i isum, __m256i p, const uint8_t* sc) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc));
  return _mm256_add_epi32(isum, _mm256_mullo_epi32(p, _mm256_cvtepu8_epi32(b)));
}

// The dot-product variants of a group kernel: vpmaddubsw (FOLIO_AVX2), AVX-VNNI, and AVX512-VNNI on 256-bit
// vectors; FOLIO_R8_GROUP_KERNEL(TARGET, NAME, BODY) defines kernel NAME<NT> for a target over a body macro.
#define FOLIO_AVX512_VNNI256 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")))
#define FOLIO_R8_GROUP_KERNEL(TARGET, NAME, BODY)                                                       \
  template <int NT>                                                                                     \
  TARGET void NAME(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y, int64_t ldy) { \
    BODY                                                                                                \
  }

// y[t·ldy + r] for the 8 rows r of the group at w (nb super-blocks) and NT tokens. (A macro, not a
// template, so that each copy is compiled for its own target: GCC will not inline a VNNI helper into a
// function compiled for plain AVX2.)
#define FOLIO_R8_GROUP_BODY(DOT, SCALE)                                                                  \
  const BlockQ4_Kx8* blk = reinterpret_cast<const BlockQ4_Kx8*>(w);                                      \
  const __m256i m4 = _mm256_set1_epi8(15);                                                               \
  __m256 acc[NT];                                                                                        \
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();                                             \
  for (int64_t b = 0; b < nb; ++b) {                                                                     \
    const BlockQ4_Kx8& g = blk[b];                                                                       \
    alignas(32) uint8_t sc[64], mn[64];                                                                  \
    q4_k_r8_scales(g, sc, mn);                                                                           \
    const BlockQ8_K* xb[NT];                                                                             \
    __m256i isum[NT];                                                                                    \
    for (int t = 0; t < NT; ++t)                                                                         \
      xb[t] = reinterpret_cast<const BlockQ8_K*>(x + t * ldx) + b, isum[t] = _mm256_setzero_si256();     \
    for (int s = 0; s < 8; ++s) {                                                                        \
      __m256i p[NT];                                                                                     \
      for (int t = 0; t < NT; ++t) p[t] = _mm256_setzero_si256();                                        \
      for (int e = 0; e < 4; ++e) {                                                                      \
        const __m256i v = load256(g.qs[s][e]);                                                           \
        const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);  \
        for (int t = 0; t < NT; ++t) {                                                                   \
          p[t] = DOT(p[t], lo, broadcast4(xb[t]->qs + 32 * s + 4 * e));                                  \
          p[t] = DOT(p[t], hi, broadcast4(xb[t]->qs + 32 * s + 16 + 4 * e));                             \
        }                                                                                                \
      }                                                                                                  \
      for (int t = 0; t < NT; ++t) isum[t] = SCALE(isum[t], p[t], sc + 8 * s);                           \
    }                                                                                                    \
    /* the mins: Σ_s min_s·(sum of sub-block s's activations), a pair of sub-blocks per vpmaddwd */    \
    __m256i mins[4];                                                                                     \
    for (int i = 0; i < 4; ++i) mins[i] = _mm256_cvtepu8_epi16(load128(mn + 16 * i));                    \
    const __m256 d = _mm256_cvtph_ps(load128(g.d)), dmin = _mm256_cvtph_ps(load128(g.dmin));             \
    for (int t = 0; t < NT; ++t) {                                                                       \
      /* the 8 sub-block sums of the activations, as 4 pairs in both lanes */                            \
      const __m256i bs =                                                                                 \
          _mm256_broadcastsi128_si256(_mm_hadd_epi16(load128(xb[t]->bsums), load128(xb[t]->bsums + 8))); \
      __m256i msum = _mm256_madd_epi16(mins[0], _mm256_shuffle_epi32(bs, 0x00));                         \
      msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mins[1], _mm256_shuffle_epi32(bs, 0x55)));         \
      msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mins[2], _mm256_shuffle_epi32(bs, 0xaa)));         \
      msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mins[3], _mm256_shuffle_epi32(bs, 0xff)));         \
      const __m256 xd = _mm256_set1_ps(xb[t]->d);                                                        \
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, xd), acc[t]);               \
      acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dmin, xd), acc[t]);              \
    }                                                                                                    \
  }                                                                                                      \
  for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);

FOLIO_R8_GROUP_KERNEL(FOLIO_AVX2, group_madd, FOLIO_R8_GROUP_BODY(dot_madd, scale_madd))
FOLIO_R8_GROUP_KERNEL(FOLIO_AVX_VNNI, group_avx_vnni, FOLIO_R8_GROUP_BODY(dot_avx_vnni, scale_i32))
FOLIO_R8_GROUP_KERNEL(FOLIO_AVX512_VNNI256, group_avx512_vnni, FOLIO_R8_GROUP_BODY(dot_avx512_vnni, scale_i32))
#undef FOLIO_R8_GROUP_BODY

// ---------------------------------------------------------------------------------------------------
// Q6_K_R8: per group of 16 elements (4 quads) the products summed per lane and scaled by the 8 rows'
// int8 scales, the −32 offset taken off once per super-block as −32·Σ_j sc_j·(group j's activation sum),
// a pair of groups per vpmaddwd against the activations' bsums. With vpmaddubsw the 16-bit lanes take two
// quads (2·2·63·128 = 32256 fits), so the scale goes in twice per group; with vpdpbusd once.

// Signed scales (bytes at sc) into isum, as scale_madd / scale_i32.
FOLIO_AVX2_INLINE __m256i scale_madd_i8(__m256i isum, __m256i p, const int8_t* sc) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc));
  return _mm256_add_epi32(isum, _mm256_madd_epi16(p, _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(b, b))));
}
FOLIO_AVX2_INLINE __m256i scale_i32_i8(__m256i isum, __m256i p, const int8_t* sc) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc));
  return _mm256_add_epi32(isum, _mm256_mullo_epi32(p, _mm256_cvtepi8_epi32(b)));
}

#define FOLIO_Q6_GROUP(I, DOT, SCALE, FLUSH)                                                                     \
  {                                                                                                              \
    const int j = 4 * h + I;                                                                                     \
    __m256i p[NT];                                                                                               \
    for (int t = 0; t < NT; ++t) p[t] = _mm256_setzero_si256();                                                  \
    for (int e = 0; e < 4; ++e) {                                                                                \
      const BlockQ6_Kx8::Quartet& qu = g.quartets[h];                                                            \
      const __m256i q = q6_quad<I>(load256(I < 2 ? qu.lo[e] : qu.lo2[e]), load256(qu.hi[e]));                    \
      for (int t = 0; t < NT; ++t) p[t] = DOT(p[t], q, broadcast4(xb[t]->qs + 16 * j + 4 * e));                  \
      if (e % FLUSH == FLUSH - 1)                                                                                \
        for (int t = 0; t < NT; ++t) isum[t] = SCALE(isum[t], p[t], g.scales[j]), p[t] = _mm256_setzero_si256(); \
    }                                                                                                            \
  }

#define FOLIO_R8_Q6_BODY(DOT, SCALE, FLUSH)                                                                         \
  const BlockQ6_Kx8* blk = reinterpret_cast<const BlockQ6_Kx8*>(w);                                                 \
  __m256 acc[NT];                                                                                                   \
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();                                                        \
  for (int64_t b = 0; b < nb; ++b) {                                                                                \
    const BlockQ6_Kx8& g = blk[b];                                                                                  \
    const BlockQ8_K* xb[NT];                                                                                        \
    __m256i isum[NT];                                                                                               \
    for (int t = 0; t < NT; ++t)                                                                                    \
      xb[t] = reinterpret_cast<const BlockQ8_K*>(x + t * ldx) + b, isum[t] = _mm256_setzero_si256();                \
    for (int pr = 0; pr < 8; ++pr) { /* the offset: pairs of groups' scales against pairs of bsums */               \
      const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g.scales[2 * pr]));                        \
      const __m128i c = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g.scales[2 * pr + 1]));                    \
      const __m256i sp = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, c));                                             \
      for (int t = 0; t < NT; ++t)                                                                                  \
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(sp, broadcast4(reinterpret_cast<const int8_t*>(       \
                                                                      xb[t]->bsums + 2 * pr))));                    \
    }                                                                                                               \
    for (int t = 0; t < NT; ++t) isum[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(isum[t], 5)); \
    for (int h = 0; h < 4; ++h) {                                                                                   \
      FOLIO_Q6_GROUP(0, DOT, SCALE, FLUSH)                                                                          \
      FOLIO_Q6_GROUP(1, DOT, SCALE, FLUSH)                                                                          \
      FOLIO_Q6_GROUP(2, DOT, SCALE, FLUSH)                                                                          \
      FOLIO_Q6_GROUP(3, DOT, SCALE, FLUSH)                                                                          \
    }                                                                                                               \
    const __m256 d = _mm256_cvtph_ps(load128(g.d));                                                                 \
    for (int t = 0; t < NT; ++t)                                                                                    \
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, _mm256_set1_ps(xb[t]->d)), acc[t]);    \
  }                                                                                                                 \
  for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);

FOLIO_R8_GROUP_KERNEL(FOLIO_AVX2, q6_group_madd, FOLIO_R8_Q6_BODY(dot_madd, scale_madd_i8, 2))
FOLIO_R8_GROUP_KERNEL(FOLIO_AVX_VNNI, q6_group_avx_vnni, FOLIO_R8_Q6_BODY(dot_avx_vnni, scale_i32_i8, 4))
#undef FOLIO_R8_Q6_BODY
#undef FOLIO_Q6_GROUP

// ---------------------------------------------------------------------------------------------------
// Q3_K_R8 and Q2_K_R8: groups of 16 elements (4 quads), each group's products summed per lane and
// scaled by the 8 rows' scales (decoded to bytes once per super-block). Q3_K's −4 offset is taken off
// once per super-block as −4·Σ_j sc_j·(group j's activation sum), Q2_K's mins likewise as Σ_j m_j·bsums_j
// (pairs of groups per vpmaddwd, as for Q6_K_R8). With vpmaddubsw a group's 16-bit lanes hold at most
// 4·2·7·128 = 7168.

// Unsigned scales (bytes at sc, 0..15) into isum, for vpdpbusd's 32-bit lanes.
FOLIO_AVX2_INLINE __m256i scale_i32_u8(__m256i isum, __m256i p, const uint8_t* sc) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc));
  return _mm256_add_epi32(isum, _mm256_mullo_epi32(p, _mm256_cvtepu8_epi32(b)));
}

#define FOLIO_Q3_GROUP(I, P, DOT, SCALE)                                                        \
  {                                                                                             \
    const int j = 8 * o + 4 * P + I;                                                            \
    __m256i p[NT];                                                                              \
    for (int t = 0; t < NT; ++t) p[t] = _mm256_setzero_si256();                                 \
    for (int e = 0; e < 4; ++e) {                                                               \
      const __m256i q = q3_quad<I, P>(lo[e], hi[e]);                                            \
      for (int t = 0; t < NT; ++t) p[t] = DOT(p[t], q, broadcast4(xb[t]->qs + 16 * j + 4 * e)); \
    }                                                                                           \
    for (int t = 0; t < NT; ++t) isum[t] = SCALE(isum[t], p[t], sc + 8 * j);                    \
  }
#define FOLIO_Q3_HALF(P, DOT, SCALE)                          \
  {                                                           \
    __m256i lo[4];                                            \
    for (int e = 0; e < 4; ++e) lo[e] = load256(oc.lo[P][e]); \
    FOLIO_Q3_GROUP(0, P, DOT, SCALE)                          \
    FOLIO_Q3_GROUP(1, P, DOT, SCALE)                          \
    FOLIO_Q3_GROUP(2, P, DOT, SCALE)                          \
    FOLIO_Q3_GROUP(3, P, DOT, SCALE)                          \
  }

#define FOLIO_R8_Q3_BODY(DOT, SCALE)                                                                                \
  const BlockQ3_Kx8* blk = reinterpret_cast<const BlockQ3_Kx8*>(w);                                                 \
  __m256 acc[NT];                                                                                                   \
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();                                                        \
  for (int64_t b = 0; b < nb; ++b) {                                                                                \
    const BlockQ3_Kx8& g = blk[b];                                                                                  \
    alignas(32) int8_t sc[128];                                                                                     \
    q3_k_r8_scales(g, sc);                                                                                          \
    const BlockQ8_K* xb[NT];                                                                                        \
    __m256i isum[NT];                                                                                               \
    for (int t = 0; t < NT; ++t)                                                                                    \
      xb[t] = reinterpret_cast<const BlockQ8_K*>(x + t * ldx) + b, isum[t] = _mm256_setzero_si256();                \
    for (int pr = 0; pr < 8; ++pr) { /* the offset: pairs of groups' scales against pairs of bsums */               \
      const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16 * pr));                            \
      const __m128i c = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16 * pr + 8));                        \
      const __m256i sp = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, c));                                             \
      for (int t = 0; t < NT; ++t)                                                                                  \
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(sp, broadcast4(reinterpret_cast<const int8_t*>(       \
                                                                      xb[t]->bsums + 2 * pr))));                    \
    }                                                                                                               \
    for (int t = 0; t < NT; ++t) isum[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(isum[t], 2)); \
    for (int o = 0; o < 2; ++o) {                                                                                   \
      const BlockQ3_Kx8::Octet& oc = g.octets[o];                                                                   \
      __m256i hi[4];                                                                                                \
      for (int e = 0; e < 4; ++e) hi[e] = load256(oc.hi[e]);                                                        \
      FOLIO_Q3_HALF(0, DOT, SCALE)                                                                                  \
      FOLIO_Q3_HALF(1, DOT, SCALE)                                                                                  \
    }                                                                                                               \
    const __m256 d = _mm256_cvtph_ps(load128(g.d));                                                                 \
    for (int t = 0; t < NT; ++t)                                                                                    \
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, _mm256_set1_ps(xb[t]->d)), acc[t]);    \
  }                                                                                                                 \
  for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);

#define FOLIO_Q2_GROUP(I, DOT, SCALE)                                                           \
  {                                                                                             \
    const int j = 4 * h + I;                                                                    \
    __m256i p[NT];                                                                              \
    for (int t = 0; t < NT; ++t) p[t] = _mm256_setzero_si256();                                 \
    for (int e = 0; e < 4; ++e) {                                                               \
      const __m256i q = _mm256_and_si256(I == 0 ? v[e] : _mm256_srli_epi16(v[e], 2 * I), m3);   \
      for (int t = 0; t < NT; ++t) p[t] = DOT(p[t], q, broadcast4(xb[t]->qs + 16 * j + 4 * e)); \
    }                                                                                           \
    for (int t = 0; t < NT; ++t) isum[t] = SCALE(isum[t], p[t], sc + 8 * j);                    \
  }

#define FOLIO_R8_Q2_BODY(DOT, SCALE)                                                                           \
  const BlockQ2_Kx8* blk = reinterpret_cast<const BlockQ2_Kx8*>(w);                                            \
  const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(15);                                           \
  __m256 acc[NT];                                                                                              \
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();                                                   \
  for (int64_t b = 0; b < nb; ++b) {                                                                           \
    const BlockQ2_Kx8& g = blk[b];                                                                             \
    /* scales and mins to bytes, index 8j + r */                                                               \
    alignas(32) uint8_t sc[128], mn[128];                                                                      \
    for (int i = 0; i < 4; ++i) {                                                                              \
      const __m256i v = load256(g.scales[4 * i]);                                                              \
      store256(sc + 32 * i, _mm256_and_si256(v, m4));                                                          \
      store256(mn + 32 * i, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));                                    \
    }                                                                                                          \
    const BlockQ8_K* xb[NT];                                                                                   \
    __m256i isum[NT], msum[NT];                                                                                \
    for (int t = 0; t < NT; ++t)                                                                               \
      xb[t] = reinterpret_cast<const BlockQ8_K*>(x + t * ldx) + b, isum[t] = msum[t] = _mm256_setzero_si256(); \
    for (int pr = 0; pr < 8; ++pr) { /* the mins: pairs of groups' mins against pairs of bsums */              \
      const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn + 16 * pr));                       \
      const __m128i c = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn + 16 * pr + 8));                   \
      const __m256i mp = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, c));                                        \
      for (int t = 0; t < NT; ++t)                                                                             \
        msum[t] = _mm256_add_epi32(msum[t], _mm256_madd_epi16(mp, broadcast4(reinterpret_cast<const int8_t*>(  \
                                                                      xb[t]->bsums + 2 * pr))));               \
    }                                                                                                          \
    for (int h = 0; h < 4; ++h) {                                                                              \
      __m256i v[4];                                                                                            \
      for (int e = 0; e < 4; ++e) v[e] = load256(g.qs[h][e]);                                                  \
      FOLIO_Q2_GROUP(0, DOT, SCALE)                                                                            \
      FOLIO_Q2_GROUP(1, DOT, SCALE)                                                                            \
      FOLIO_Q2_GROUP(2, DOT, SCALE)                                                                            \
      FOLIO_Q2_GROUP(3, DOT, SCALE)                                                                            \
    }                                                                                                          \
    const __m256 d = _mm256_cvtph_ps(load128(g.d)), dmin = _mm256_cvtph_ps(load128(g.dmin));                   \
    for (int t = 0; t < NT; ++t) {                                                                             \
      const __m256 xd = _mm256_set1_ps(xb[t]->d);                                                              \
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, xd), acc[t]);                     \
      acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(msum[t]), _mm256_mul_ps(dmin, xd), acc[t]);                 \
    }                                                                                                          \
  }                                                                                                            \
  for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);

FOLIO_R8_GROUP_KERNEL(FOLIO_AVX2, q3_group_madd, FOLIO_R8_Q3_BODY(dot_madd, scale_madd_i8))
FOLIO_R8_GROUP_KERNEL(FOLIO_AVX_VNNI, q3_group_avx_vnni, FOLIO_R8_Q3_BODY(dot_avx_vnni, scale_i32_i8))
FOLIO_R8_GROUP_KERNEL(FOLIO_AVX512_VNNI256, q3_group_avx512_vnni, FOLIO_R8_Q3_BODY(dot_avx512_vnni, scale_i32_i8))
FOLIO_R8_GROUP_KERNEL(FOLIO_AVX2, q2_group_madd, FOLIO_R8_Q2_BODY(dot_madd, scale_madd))
FOLIO_R8_GROUP_KERNEL(FOLIO_AVX_VNNI, q2_group_avx_vnni, FOLIO_R8_Q2_BODY(dot_avx_vnni, scale_i32_u8))
FOLIO_R8_GROUP_KERNEL(FOLIO_AVX512_VNNI256, q2_group_avx512_vnni, FOLIO_R8_Q2_BODY(dot_avx512_vnni, scale_i32_u8))
// IQ4_XS_R8: the code book values looked up from the nibbles (vpshufb), a sub-block's products summed per
// lane and scaled by the 8 rows' ls − 32. With vpmaddubsw the signed values go in as |v| against x
// carrying v's sign (v is never 0; Q8_K's quants are within ±127): a pair is at most 2·127·127 = 32258,
// widened to 32 bits at once. With vpdpbusd the book is biased by 128 (unsigned) and 128·Σx taken off per
// sub-block from the activations' group sums.
FOLIO_AVX2_INLINE __m256i iq4_dot_madd(__m256i acc, __m256i v, __m256i x) {
  const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(x, v));
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

#define FOLIO_R8_IQ4_BODY(DOT, BIASED)                                                                             \
  const BlockIQ4_XSx8* blk = reinterpret_cast<const BlockIQ4_XSx8*>(w);                                            \
  const __m256i m4 = _mm256_set1_epi8(15), book = iq4_book<BIASED>();                                              \
  __m256 acc[NT];                                                                                                  \
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();                                                       \
  for (int64_t b = 0; b < nb; ++b) {                                                                               \
    const BlockIQ4_XSx8& g = blk[b];                                                                               \
    alignas(32) int8_t sc[64];                                                                                     \
    iq4_xs_r8_scales(g, sc);                                                                                       \
    const BlockQ8_K* xb[NT];                                                                                       \
    __m256i isum[NT];                                                                                              \
    for (int t = 0; t < NT; ++t)                                                                                   \
      xb[t] = reinterpret_cast<const BlockQ8_K*>(x + t * ldx) + b, isum[t] = _mm256_setzero_si256();               \
    for (int s = 0; s < 8; ++s) {                                                                                  \
      __m256i p[NT];                                                                                               \
      for (int t = 0; t < NT; ++t) p[t] = _mm256_setzero_si256();                                                  \
      for (int e = 0; e < 4; ++e) {                                                                                \
        const __m256i v = load256(g.qs[s][e]);                                                                     \
        const __m256i lo = _mm256_shuffle_epi8(book, _mm256_and_si256(v, m4));                                     \
        const __m256i hi = _mm256_shuffle_epi8(book, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));               \
        for (int t = 0; t < NT; ++t) {                                                                             \
          p[t] = DOT(p[t], lo, broadcast4(xb[t]->qs + 32 * s + 4 * e));                                            \
          p[t] = DOT(p[t], hi, broadcast4(xb[t]->qs + 32 * s + 16 + 4 * e));                                       \
        }                                                                                                          \
      }                                                                                                            \
      for (int t = 0; t < NT; ++t) {                                                                               \
        if (BIASED)                                                                                                \
          p[t] = _mm256_sub_epi32(p[t], _mm256_set1_epi32(128 * (xb[t]->bsums[2 * s] + xb[t]->bsums[2 * s + 1]))); \
        isum[t] = scale_i32_i8(isum[t], p[t], sc + 8 * s);                                                         \
      }                                                                                                            \
    }                                                                                                              \
    const __m256 d = _mm256_cvtph_ps(load128(g.d));                                                                \
    for (int t = 0; t < NT; ++t)                                                                                   \
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, _mm256_set1_ps(xb[t]->d)), acc[t]);   \
  }                                                                                                                \
  for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);

FOLIO_R8_GROUP_KERNEL(FOLIO_AVX2, iq4_group_madd, FOLIO_R8_IQ4_BODY(iq4_dot_madd, false))
FOLIO_R8_GROUP_KERNEL(FOLIO_AVX_VNNI, iq4_group_avx_vnni, FOLIO_R8_IQ4_BODY(dot_avx_vnni, true))
FOLIO_R8_GROUP_KERNEL(FOLIO_AVX512_VNNI256, iq4_group_avx512_vnni, FOLIO_R8_IQ4_BODY(dot_avx512_vnni, true))
#undef FOLIO_R8_IQ4_BODY
#undef FOLIO_R8_Q3_BODY
#undef FOLIO_Q3_HALF
#undef FOLIO_Q3_GROUP
#undef FOLIO_R8_Q2_BODY
#undef FOLIO_Q2_GROUP

// ---------------------------------------------------------------------------------------------------

template <GemvRowFn F1, GemvRowFn F2, GemvRowFn F3>
struct R8 {
  // decode: the rows of the range, three tokens at a time
  static constexpr auto gemv = gemv_k_quant<F1, F2, F3, 8>;
  // prefill: group after group, each against all n tokens while it is in L1
  static void gemm(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m,
                   int64_t n) {
    for (int64_t r = 0; r < m; r += 8)
      gemv(k, static_cast<const uint8_t*>(w) + size_t(r) * ldw, ldw, x, ldx, y + r, ldy, 8, n);
  }
};
using R8Madd = R8<group_madd<1>, group_madd<2>, group_madd<3>>;
using R8AvxVnni = R8<group_avx_vnni<1>, group_avx_vnni<2>, group_avx_vnni<3>>;
using R8Avx512Vnni = R8<group_avx512_vnni<1>, group_avx512_vnni<2>, group_avx512_vnni<3>>;
using Q6R8Madd = R8<q6_group_madd<1>, q6_group_madd<2>, q6_group_madd<3>>;
using Q6R8AvxVnni = R8<q6_group_avx_vnni<1>, q6_group_avx_vnni<2>, q6_group_avx_vnni<3>>;
using Q3R8Madd = R8<q3_group_madd<1>, q3_group_madd<2>, q3_group_madd<3>>;
using Q3R8AvxVnni = R8<q3_group_avx_vnni<1>, q3_group_avx_vnni<2>, q3_group_avx_vnni<3>>;
using Q3R8Avx512Vnni = R8<q3_group_avx512_vnni<1>, q3_group_avx512_vnni<2>, q3_group_avx512_vnni<3>>;
using Q2R8Madd = R8<q2_group_madd<1>, q2_group_madd<2>, q2_group_madd<3>>;
using Q2R8AvxVnni = R8<q2_group_avx_vnni<1>, q2_group_avx_vnni<2>, q2_group_avx_vnni<3>>;
using Q2R8Avx512Vnni = R8<q2_group_avx512_vnni<1>, q2_group_avx512_vnni<2>, q2_group_avx512_vnni<3>>;
using IQ4R8Madd = R8<iq4_group_madd<1>, iq4_group_madd<2>, iq4_group_madd<3>>;
using IQ4R8AvxVnni = R8<iq4_group_avx_vnni<1>, iq4_group_avx_vnni<2>, iq4_group_avx_vnni<3>>;
using IQ4R8Avx512Vnni = R8<iq4_group_avx512_vnni<1>, iq4_group_avx512_vnni<2>, iq4_group_avx512_vnni<3>>;

}  // namespace
}  // namespace avx2r8

void add_r8_kernels(KernelTable& t, R8Dot dot) {
  using namespace avx2r8;
  Kernels& k = slot(t, TensorType::Q4_K_R8);
  Kernels& k6 = slot(t, TensorType::Q6_K_R8);
  Kernels& k3 = slot(t, TensorType::Q3_K_R8);
  Kernels& k2 = slot(t, TensorType::Q2_K_R8);
  Kernels& ki = slot(t, TensorType::IQ4_XS_R8);
  switch (dot) {
    case R8Dot::Madd:
      k.gemv = R8Madd::gemv, k.gemm = R8Madd::gemm;
      k6.gemv = Q6R8Madd::gemv, k6.gemm = Q6R8Madd::gemm;
      k3.gemv = Q3R8Madd::gemv, k3.gemm = Q3R8Madd::gemm;
      k2.gemv = Q2R8Madd::gemv, k2.gemm = Q2R8Madd::gemm;
      ki.gemv = IQ4R8Madd::gemv, ki.gemm = IQ4R8Madd::gemm;
      break;
    // with VNNI the blocked products are those over unpacked weights (add_unpacked_kernels)
    case R8Dot::AvxVnni:
      k.gemv = R8AvxVnni::gemv, k6.gemv = Q6R8AvxVnni::gemv, k3.gemv = Q3R8AvxVnni::gemv;
      k2.gemv = Q2R8AvxVnni::gemv, ki.gemv = IQ4R8AvxVnni::gemv;
      break;
    case R8Dot::Avx512Vnni:  // (AVX-512 keeps Q6_K: cpu_layout; Q6_K_R8's is the plain AVX2 one, for tests)
      k.gemv = R8Avx512Vnni::gemv, k6.gemv = Q6R8Madd::gemv, k3.gemv = Q3R8Avx512Vnni::gemv;
      k2.gemv = Q2R8Avx512Vnni::gemv, ki.gemv = IQ4R8Avx512Vnni::gemv;
      break;
  }
  add_q8_0_r8_kernels(t, dot);
  add_unpacked_kernels(t, dot);
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_X86
