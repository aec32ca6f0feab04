// Prefill (Kernels::gemm) of the K-quants and IQ4_XS with VNNI, over weights unpacked once per call
// (Q8_0_R8's is in gemm-q8r8-x86.cc).
//
// The group kernels of gemm-r8-x86.cc unpack every vector of quants and every block's scales again for
// each three tokens, about as many instructions as the products themselves, and keep only three chains
// of vpdpbusd in flight (latency 4 on Zen 4, two 256-bit or one 512-bit issued per cycle). Here R rows
// (8 on 256-bit vectors, 16 on 512-bit ones) are unpacked once per call into a thread buffer, one byte
// per quant and the scales widened, and the tokens pass over that copy NT at a time with nothing left
// per token but the products, the scaling and the offsets (docs/benchmarks-log.md, "Prefill over unpacked
// weights": 1.45–2.2× on Zen 4).
//
// Each output is exactly the group kernels' integer sums, scaled as theirs: the results equal the
// scalar reference's within float rounding (matmul-selftest).
#include "quant/kernels.h"

#if FOLIO_QUANT_X86

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "quant/blocks.h"
#include "quant/gemm.h"
#include "quant/r8-x86.h"

namespace folio::quant {
namespace unpacked {
namespace {

using namespace r8x86;  // (and avx2::load128, load256)

// One super-block of R rows, unpacked, for groups of G quants sharing a scale:
//   y_r = d_r·xd·Σ_g sc_rg·(Σ_{i in g} q_ri·x_i) − dmin_r·xd·Σ_g off_rg·xsum_g
// (xd, xsum_g: the Q8_K activations' scale and their sum over group g). For R = 8: 2,496 bytes for Q4_K
// (G = 32), 2,880 for Q6_K (G = 16), about 20 KiB per 2,048 columns.
template <int G, int R>
struct KUnpacked {
  static constexpr int kGroups = QK_K / G;
  uint8_t q[QK_K / 4][4 * R];       // [quad v][row r][k]: element 4v + k of row r (unsigned)
  int32_t sc[kGroups][R];           // [g][r]
  int16_t off[kGroups / 2][2 * R];  // [p][2r + i]: the offset of group 2p + i of row r
  float d[R], dmin[R];              // [r]
};
// whole vectors, so that a thread buffer of them keeps every field aligned for 512-bit loads
static_assert(sizeof(KUnpacked<32, 16>) % 64 == 0 && sizeof(KUnpacked<16, 16>) % 64 == 0);
static_assert(sizeof(KUnpacked<32, 8>) % 32 == 0 && sizeof(KUnpacked<16, 8>) % 32 == 0);

// The unpackers write 8 rows into the half h (0, or 1 of 16 rows) of an unpacked super-block.
template <int G, int R>
struct Half {
  KUnpacked<G, R>& o;
  int h;
  uint8_t* q(int v) const { return o.q[v] + 32 * h; }
  int32_t* sc(int g) const { return o.sc[g] + 8 * h; }
  int16_t* off(int p) const { return o.off[p] + 16 * h; }
  float* d() const { return o.d + 8 * h; }
  float* dmin() const { return o.dmin + 8 * h; }
};

// Q4_K_R8: q = the nibble, sc and off the 6-bit scale and min of each sub-block of 32, dmin the file's.
template <int R>
FOLIO_AVX2 void unpack_q4_k_r8(const uint8_t* w, int64_t nb, KUnpacked<32, R>* u, int h) {
  const BlockQ4_Kx8* blk = reinterpret_cast<const BlockQ4_Kx8*>(w);
  const __m256i m4 = _mm256_set1_epi8(15);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_Kx8& g = blk[b];
    const Half<32, R> o{u[b], h};
    alignas(32) uint8_t sc[64], mn[64];
    q4_k_r8_scales(g, sc, mn);
    for (int s = 0; s < 8; ++s) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.sc(s)),
                          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8 * s))));
      for (int e = 0; e < 4; ++e) {
        const __m256i v = load256(g.qs[s][e]);
        store256(o.q(8 * s + e), _mm256_and_si256(v, m4));
        store256(o.q(8 * s + 4 + e), _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
      }
    }
    for (int p = 0; p < 4; ++p) store256(o.off(p), _mm256_cvtepu8_epi16(load128(mn + 16 * p)));
    _mm256_store_ps(o.d(), _mm256_cvtph_ps(load128(g.d)));
    _mm256_store_ps(o.dmin(), _mm256_cvtph_ps(load128(g.dmin)));
  }
}

// Signed int8 scales of 8 rows (bytes at sc, [g][r]) and their fp16 d, where the quants carry an offset
// of 2^Shift: d·sc·(q − 2^Shift), so off = 2^Shift·sc and dmin = d (Q6_K: 32, Q3_K: 4; IQ4_XS's book
// biased by 128).
template <int Shift, int G, int R>
FOLIO_AVX2_INLINE void signed_scales(const int8_t* sc, const uint16_t* d, const Half<G, R>& o) {
  constexpr int kGroups = QK_K / G;
  for (int g = 0; g < kGroups; ++g)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.sc(g)),
                        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8 * g))));
  for (int p = 0; p < kGroups / 2; ++p) {
    const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16 * p));
    const __m128i c = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 16 * p + 8));
    store256(o.off(p), _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, c)), Shift));
  }
  const __m256 dv = _mm256_cvtph_ps(load128(d));
  _mm256_store_ps(o.d(), dv);
  _mm256_store_ps(o.dmin(), dv);
}

// Q6_K_R8 (the AVX2 tables' layout).
template <int R>
FOLIO_AVX2 void unpack_q6_k_r8(const uint8_t* w, int64_t nb, KUnpacked<16, R>* u, int h) {
  const BlockQ6_Kx8* blk = reinterpret_cast<const BlockQ6_Kx8*>(w);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6_Kx8& g = blk[b];
    const Half<16, R> o{u[b], h};
    for (int hq = 0; hq < 4; ++hq) {
      const BlockQ6_Kx8::Quartet& qu = g.quartets[hq];
      for (int e = 0; e < 4; ++e) {
        const __m256i lo = load256(qu.lo[e]), lo2 = load256(qu.lo2[e]), hi = load256(qu.hi[e]);
        store256(o.q(16 * hq + e), q6_quad<0>(lo, hi));
        store256(o.q(16 * hq + 4 + e), q6_quad<1>(lo, hi));
        store256(o.q(16 * hq + 8 + e), q6_quad<2>(lo2, hi));
        store256(o.q(16 * hq + 12 + e), q6_quad<3>(lo2, hi));
      }
    }
    signed_scales<5>(&g.scales[0][0], g.d, o);
  }
}

// Q2_K_R8: q = the 2-bit quant, sc and off the 4-bit scale and min of each group of 16.
template <int R>
FOLIO_AVX2 void unpack_q2_k_r8(const uint8_t* w, int64_t nb, KUnpacked<16, R>* u, int h) {
  const BlockQ2_Kx8* blk = reinterpret_cast<const BlockQ2_Kx8*>(w);
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m128i m4 = _mm_set1_epi8(15);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ2_Kx8& g = blk[b];
    const Half<16, R> o{u[b], h};
    for (int hq = 0; hq < 4; ++hq)
      for (int e = 0; e < 4; ++e) {
        const __m256i v = load256(g.qs[hq][e]);
        for (int i = 0; i < 4; ++i)
          store256(o.q(4 * (4 * hq + i) + e), _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(2 * i)), m3));
      }
    for (int j = 0; j < 16; ++j) {
      const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g.scales[j]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.sc(j)), _mm256_cvtepu8_epi32(_mm_and_si128(v, m4)));
    }
    for (int p = 0; p < 8; ++p) {
      const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g.scales[2 * p]));
      const __m128i c = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g.scales[2 * p + 1]));
      const __m128i mins = _mm_and_si128(_mm_srli_epi16(_mm_unpacklo_epi8(a, c), 4), m4);
      store256(o.off(p), _mm256_cvtepu8_epi16(mins));
    }
    _mm256_store_ps(o.d(), _mm256_cvtph_ps(load128(g.d)));
    _mm256_store_ps(o.dmin(), _mm256_cvtph_ps(load128(g.dmin)));
  }
}

// Q3_K_R8: q = the 3-bit quant (0..7), d·(sc − 32)·(q − 4).
template <int P, int I, int R>
FOLIO_AVX2_INLINE void q3_unpack_group(const BlockQ3_Kx8::Octet& oc, int oct, const Half<16, R>& o) {
  for (int e = 0; e < 4; ++e)
    store256(o.q(4 * (8 * oct + 4 * P + I) + e), q3_quad<I, P>(load256(oc.lo[P][e]), load256(oc.hi[e])));
}
template <int R>
FOLIO_AVX2 void unpack_q3_k_r8(const uint8_t* w, int64_t nb, KUnpacked<16, R>* u, int h) {
  const BlockQ3_Kx8* blk = reinterpret_cast<const BlockQ3_Kx8*>(w);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ3_Kx8& g = blk[b];
    const Half<16, R> o{u[b], h};
    for (int oct = 0; oct < 2; ++oct) {
      const BlockQ3_Kx8::Octet& oc = g.octets[oct];
      q3_unpack_group<0, 0>(oc, oct, o), q3_unpack_group<0, 1>(oc, oct, o);
      q3_unpack_group<0, 2>(oc, oct, o), q3_unpack_group<0, 3>(oc, oct, o);
      q3_unpack_group<1, 0>(oc, oct, o), q3_unpack_group<1, 1>(oc, oct, o);
      q3_unpack_group<1, 2>(oc, oct, o), q3_unpack_group<1, 3>(oc, oct, o);
    }
    alignas(32) int8_t sc[128];
    q3_k_r8_scales(g, sc);
    signed_scales<2>(sc, g.d, o);
  }
}

// IQ4_XS_R8: q = the code book's value + 128, d·(ls − 32)·(q − 128).
template <int R>
FOLIO_AVX2 void unpack_iq4_xs_r8(const uint8_t* w, int64_t nb, KUnpacked<32, R>* u, int h) {
  const BlockIQ4_XSx8* blk = reinterpret_cast<const BlockIQ4_XSx8*>(w);
  const __m256i m4 = _mm256_set1_epi8(15), book = iq4_book<true>();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIQ4_XSx8& g = blk[b];
    const Half<32, R> o{u[b], h};
    for (int s = 0; s < 8; ++s)
      for (int e = 0; e < 4; ++e) {
        const __m256i v = load256(g.qs[s][e]);
        store256(o.q(8 * s + e), _mm256_shuffle_epi8(book, _mm256_and_si256(v, m4)));
        store256(o.q(8 * s + 4 + e), _mm256_shuffle_epi8(book, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4)));
      }
    alignas(32) int8_t sc[64];
    iq4_xs_r8_scales(g, sc);
    signed_scales<7>(sc, g.d, o);
  }
}

// rows[c][r] holds elements 32c .. 32c + 31 of row r (8 rows): into [quad][row] order, by an 8 × 8
// transpose of 32-bit units per 32 elements (quad 8c + j of row r is unit j of rows[c][r]).
template <int G, int R>
FOLIO_AVX2_INLINE void store_quads(const __m256i (&rows)[8][8], const Half<G, R>& o) {
  for (int c = 0; c < 8; ++c) {
    const __m256i* v = rows[c];
    const __m256i a0 = _mm256_unpacklo_epi32(v[0], v[1]), a1 = _mm256_unpackhi_epi32(v[0], v[1]);
    const __m256i a2 = _mm256_unpacklo_epi32(v[2], v[3]), a3 = _mm256_unpackhi_epi32(v[2], v[3]);
    const __m256i a4 = _mm256_unpacklo_epi32(v[4], v[5]), a5 = _mm256_unpackhi_epi32(v[4], v[5]);
    const __m256i a6 = _mm256_unpacklo_epi32(v[6], v[7]), a7 = _mm256_unpackhi_epi32(v[6], v[7]);
    const __m256i t[8] = {_mm256_unpacklo_epi64(a0, a2), _mm256_unpackhi_epi64(a0, a2), _mm256_unpacklo_epi64(a1, a3),
                          _mm256_unpackhi_epi64(a1, a3), _mm256_unpacklo_epi64(a4, a6), _mm256_unpackhi_epi64(a4, a6),
                          _mm256_unpacklo_epi64(a5, a7), _mm256_unpackhi_epi64(a5, a7)};
    for (int j = 0; j < 4; ++j) {
      store256(o.q(8 * c + j), _mm256_permute2x128_si256(t[j], t[4 + j], 0x20));
      store256(o.q(8 * c + 4 + j), _mm256_permute2x128_si256(t[j], t[4 + j], 0x31));
    }
  }
}

// 8 rows of Q6_K as in the file (the AVX-512 tables keep Q6_K unrepacked: their matrix-vector kernel
// reads it faster), ldw bytes apart.
template <int R>
FOLIO_AVX2 void unpack_q6_k_rows(const uint8_t* w, size_t ldw, int64_t nb, KUnpacked<16, R>* u, int h) {
  const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
  for (int64_t b = 0; b < nb; ++b) {
    alignas(32) int8_t sc[16][8];
    alignas(16) uint16_t d[8];
    __m256i rows[8][8];
    for (int r = 0; r < 8; ++r) {
      const BlockQ6_K& q = reinterpret_cast<const BlockQ6_K*>(w + size_t(r) * ldw)[b];
      for (int hf = 0; hf < 2; ++hf) {  // blocks.h: element 128hf + 32i + l from ql and qh
        const __m256i l0 = load256(q.ql + 64 * hf), l1 = load256(q.ql + 64 * hf + 32), hb = load256(q.qh + 32 * hf);
        rows[4 * hf + 0][r] =
            _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
        rows[4 * hf + 1][r] =
            _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
        rows[4 * hf + 2][r] =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hb, m30));
        rows[4 * hf + 3][r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                              _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
      }
      for (int g = 0; g < 16; ++g) sc[g][r] = q.scales[g];
      d[r] = q.d;
    }
    const Half<16, R> o{u[b], h};
    store_quads(rows, o);
    signed_scales<5>(&sc[0][0], d, o);
  }
}

// The fifth bit of Q5_K's quants: bit B of each byte of qh moved to bit 4.
template <int B>
FOLIO_AVX2_INLINE __m256i q5_bit(__m256i qh) {
  const __m256i bit = _mm256_and_si256(qh, _mm256_set1_epi8(char(1 << B)));
  return B <= 4 ? _mm256_slli_epi16(bit, 4 - B) : _mm256_srli_epi16(bit, B - 4);
}

// 8 rows of Q5_K as in the file (no x86 table repacks it), ldw bytes apart: q = the 5-bit quant, sc and
// off the 6-bit scale and min of each sub-block of 32, as Q4_K_R8.
template <int R>
FOLIO_AVX2 void unpack_q5_k_rows(const uint8_t* w, size_t ldw, int64_t nb, KUnpacked<32, R>* u, int h) {
  const __m256i m4 = _mm256_set1_epi8(15);
  for (int64_t b = 0; b < nb; ++b) {
    const Half<32, R> o{u[b], h};
    __m256i rows[8][8];
    alignas(16) uint16_t d[8], dmin[8];
    for (int r = 0; r < 8; ++r) {
      const BlockQ5_K& q = reinterpret_cast<const BlockQ5_K*>(w + size_t(r) * ldw)[b];
      const __m256i qh = load256(q.qh);
      // blocks.h: element 64c + l is qs[32c + l] & 15 with qh bit 2c, 64c + 32 + l the high nibble with bit 2c + 1
      const __m256i q0 = load256(q.qs), q1 = load256(q.qs + 32), q2 = load256(q.qs + 64), q3 = load256(q.qs + 96);
      rows[0][r] = _mm256_or_si256(_mm256_and_si256(q0, m4), q5_bit<0>(qh));
      rows[1][r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q0, 4), m4), q5_bit<1>(qh));
      rows[2][r] = _mm256_or_si256(_mm256_and_si256(q1, m4), q5_bit<2>(qh));
      rows[3][r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q1, 4), m4), q5_bit<3>(qh));
      rows[4][r] = _mm256_or_si256(_mm256_and_si256(q2, m4), q5_bit<4>(qh));
      rows[5][r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q2, 4), m4), q5_bit<5>(qh));
      rows[6][r] = _mm256_or_si256(_mm256_and_si256(q3, m4), q5_bit<6>(qh));
      rows[7][r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q3, 4), m4), q5_bit<7>(qh));
      uint8_t sc[8], mn[8];
      unpack_scales_k4(q.scales, sc, mn);
      for (int s = 0; s < 8; ++s) o.sc(s)[r] = sc[s];
      for (int p = 0; p < 4; ++p) o.off(p)[2 * r] = mn[2 * p], o.off(p)[2 * r + 1] = mn[2 * p + 1];
      d[r] = q.d, dmin[r] = q.dmin;
    }
    store_quads(rows, o);
    _mm256_store_ps(o.d(), _mm256_cvtph_ps(load128(d)));
    _mm256_store_ps(o.dmin(), _mm256_cvtph_ps(load128(dmin)));
  }
}

// y[t·ldy + r] for the R rows of an unpacked block at w (nb super-blocks) and NT tokens, over the vector
// operations V_* below (a macro per target, not a template: GCC inlines a helper only into a function of
// its own target or a wider one).
#define FOLIO_UNPACKED_BODY                                                                                         \
  using U = KUnpacked<G, R>;                                                                                        \
  const U* blk = reinterpret_cast<const U*>(w);                                                                     \
  V_F acc[NT];                                                                                                      \
  for (int t = 0; t < NT; ++t) acc[t] = V_ZERO_F();                                                                 \
  for (int64_t b = 0; b < nb; ++b) {                                                                                \
    const U& g = blk[b];                                                                                            \
    const BlockQ8_K* xb[NT];                                                                                        \
    V_I isum[NT];                                                                                                   \
    for (int t = 0; t < NT; ++t) xb[t] = reinterpret_cast<const BlockQ8_K*>(x + t * ldx) + b, isum[t] = V_ZERO_I(); \
    for (int j = 0; j < U::kGroups; ++j) {                                                                          \
      V_I p[NT];                                                                                                    \
      for (int t = 0; t < NT; ++t) p[t] = V_ZERO_I();                                                               \
      /* unrolled: else GCC rotates the sums through register moves */                                              \
      _Pragma("GCC unroll 8") for (int i = 0; i < G / 4; ++i) {                                                     \
        const int v = j * G / 4 + i;                                                                                \
        const V_I q = V_LOAD_I(g.q[v]);                                                                             \
        for (int t = 0; t < NT; ++t) p[t] = V_DOT(p[t], q, V_SET1_I(bytes4(xb[t]->qs + 4 * v)));                    \
      }                                                                                                             \
      const V_I sc = V_LOAD_I(g.sc[j]);                                                                             \
      for (int t = 0; t < NT; ++t) isum[t] = V_ADD_I(isum[t], V_MULLO(p[t], sc));                                   \
    }                                                                                                               \
    const V_F d = V_LOAD_F(g.d), dmin = V_LOAD_F(g.dmin);                                                           \
    for (int t = 0; t < NT; ++t) {                                                                                  \
      /* the activations' sums per group, a pair of groups in every 32-bit lane */                                  \
      V_I msum = V_ZERO_I();                                                                                        \
      if (G == 32) {                                                                                                \
        const V_I bs = V_BCAST128(_mm_hadd_epi16(load128(xb[t]->bsums), load128(xb[t]->bsums + 8)));                \
        msum = V_MADD(V_LOAD_I(g.off[0]), V_SHUFFLE(bs, 0x00));                                                     \
        msum = V_ADD_I(msum, V_MADD(V_LOAD_I(g.off[1]), V_SHUFFLE(bs, 0x55)));                                      \
        msum = V_ADD_I(msum, V_MADD(V_LOAD_I(g.off[2]), V_SHUFFLE(bs, 0xaa)));                                      \
        msum = V_ADD_I(msum, V_MADD(V_LOAD_I(g.off[3]), V_SHUFFLE(bs, 0xff)));                                      \
      } else {                                                                                                      \
        for (int pr = 0; pr < U::kGroups / 2; ++pr)                                                                 \
          msum = V_ADD_I(msum, V_MADD(V_LOAD_I(g.off[pr]), V_SET1_I(bytes4(xb[t]->bsums + 2 * pr))));               \
      }                                                                                                             \
      const V_F xd = V_SET1_F(xb[t]->d);                                                                            \
      acc[t] = V_FMADD(V_CVT(isum[t]), V_MUL_F(d, xd), acc[t]);                                                     \
      acc[t] = V_FNMADD(V_CVT(msum), V_MUL_F(dmin, xd), acc[t]);                                                    \
    }                                                                                                               \
  }                                                                                                                 \
  for (int t = 0; t < NT; ++t) V_STORE_F(y + t * ldy, acc[t]);

// The vector operations V_*, each as its 256-bit (AVX-VNNI, 8 rows) and 512-bit (AVX512-VNNI, 16 rows)
// form: FOLIO_W, defined before each kernel below, picks one.
#define FOLIO_PASTE(a, b) a##b
#define FOLIO_XPASTE(a, b) FOLIO_PASTE(a, b)
#define FOLIO_SEL256(a, b) a
#define FOLIO_SEL512(a, b) b
#define V_SEL(a, b) FOLIO_XPASTE(FOLIO_SEL, FOLIO_W)(a, b)
#define FOLIO_MM256_LOAD(p) _mm256_load_si256(reinterpret_cast<const __m256i*>(p))
#define FOLIO_MM512_SHUFFLE(a, imm) _mm512_shuffle_epi32(a, static_cast<_MM_PERM_ENUM>(imm))
#define V_I V_SEL(__m256i, __m512i)
#define V_F V_SEL(__m256, __m512)
#define V_ZERO_I V_SEL(_mm256_setzero_si256, _mm512_setzero_si512)
#define V_ZERO_F V_SEL(_mm256_setzero_ps, _mm512_setzero_ps)
#define V_LOAD_I V_SEL(FOLIO_MM256_LOAD, _mm512_load_si512)
#define V_LOAD_F V_SEL(_mm256_load_ps, _mm512_load_ps)
#define V_SET1_I V_SEL(_mm256_set1_epi32, _mm512_set1_epi32)
#define V_SET1_F V_SEL(_mm256_set1_ps, _mm512_set1_ps)
#define V_DOT V_SEL(FOLIO_DPBUSD256, _mm512_dpbusd_epi32)
#define V_ADD_I V_SEL(_mm256_add_epi32, _mm512_add_epi32)
#define V_MULLO V_SEL(_mm256_mullo_epi32, _mm512_mullo_epi32)
#define V_MADD V_SEL(_mm256_madd_epi16, _mm512_madd_epi16)
#define V_CVT V_SEL(_mm256_cvtepi32_ps, _mm512_cvtepi32_ps)
#define V_MUL_F V_SEL(_mm256_mul_ps, _mm512_mul_ps)
#define V_FMADD V_SEL(_mm256_fmadd_ps, _mm512_fmadd_ps)
#define V_FNMADD V_SEL(_mm256_fnmadd_ps, _mm512_fnmadd_ps)
#define V_BCAST128 V_SEL(_mm256_broadcastsi128_si256, _mm512_broadcast_i32x4)
#define V_SHUFFLE V_SEL(_mm256_shuffle_epi32, FOLIO_MM512_SHUFFLE)
#define V_STORE_F V_SEL(_mm256_storeu_ps, _mm512_storeu_ps)

#define FOLIO_W 256
template <int G, int NT>
FOLIO_AVX_VNNI void kernel_avx_vnni(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y, int64_t ldy) {
  constexpr int R = 8;
  FOLIO_UNPACKED_BODY
}
#undef FOLIO_W
#define FOLIO_W 512
template <int G, int NT>
__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"))) void kernel_avx512_vnni(
    int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y, int64_t ldy) {
  constexpr int R = 16;
  FOLIO_UNPACKED_BODY
}
#undef FOLIO_W

// An unpacker of 8 rows of a file layout, ldw bytes apart (the others read a repacked group: the 8 rows'
// blocks in one run).
template <int G, int R>
using RowsUnpack = void (*)(const uint8_t* w, size_t ldw, int64_t nb, KUnpacked<G, R>* u, int h);

// Kernels::gemm over unpacked blocks of R rows: each unpacked once (8 rows at a time: from a group at w +
// r·ldw of a repacked layout, or from 8 rows of a file layout), then passed by all n tokens NT =
// sizeof...(Fns) at a time (Fns: the kernels for 1 .. NT tokens). Rows past the last whole block (m need
// not be a multiple of R) are unpacked from copies of the last row and their outputs dropped.
template <int G, int R, auto Unpack, GemvRowFn... Fns>
void gemm_unpacked(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m,
                   int64_t n) {
  static constexpr GemvRowFn fns[] = {Fns...};
  constexpr int64_t NT = sizeof...(Fns);
  constexpr bool kRows = std::is_same_v<decltype(Unpack), RowsUnpack<G, R>>;
  const int64_t nb = k / QK_K;
  auto* u = reinterpret_cast<KUnpacked<G, R>*>(thread_buffer<0>(size_t(nb) * sizeof(KUnpacked<G, R>)));
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  std::vector<uint8_t> pad;
  for (int64_t r = 0; r < m; r += R) {
    const int64_t rows = std::min<int64_t>(R, m - r);
    for (int h = 0; h < R / 8; ++h) {
      const int64_t r8 = r + 8 * h;  // the first of these 8 rows
      if constexpr (kRows) {
        if (r8 + 8 <= m) {
          Unpack(wb + size_t(r8) * ldw, ldw, nb, u, h);
        } else {  // pad the last rows with copies of row m − 1
          pad.resize(size_t(8) * ldw);
          for (int64_t i = 0; i < 8; ++i)
            std::memcpy(pad.data() + size_t(i) * ldw, wb + size_t(std::min(r8 + i, m - 1)) * ldw, ldw);
          Unpack(pad.data(), ldw, nb, u, h);
        }
      } else {  // a repacked layout: whole groups of 8; a missing second half repeats the first
        Unpack(wb + size_t(std::min(r8, m - 8)) * ldw, nb, u, h);
      }
    }
    r8x86::NextRows next(wb + size_t(std::min(r + R, m)) * ldw, wb + size_t(std::min(r + 2 * R, m)) * ldw,
                         (n + NT - 1) / NT);
    for (int64_t t0 = 0; t0 < n; t0 += NT) {
      next.step();
      const int nt = int(std::min<int64_t>(NT, n - t0));
      if (rows == R) {
        fns[nt - 1](nb, reinterpret_cast<const uint8_t*>(u), xb + size_t(t0) * ldx, ldx, y + t0 * ldy + r, ldy);
      } else {
        float out[NT * R];
        fns[nt - 1](nb, reinterpret_cast<const uint8_t*>(u), xb + size_t(t0) * ldx, ldx, out, R);
        for (int t = 0; t < nt; ++t) std::memcpy(y + (t0 + t) * ldy + r, out + R * t, size_t(rows) * sizeof(float));
      }
    }
  }
}

// NT = 4 tokens a pass with 16 vector registers (AVX-VNNI), 6 with 32 (AVX-512).
template <int G, auto Unpack>
constexpr auto gemm_avx_vnni = gemm_unpacked<G, 8, Unpack, kernel_avx_vnni<G, 1>, kernel_avx_vnni<G, 2>,
                                             kernel_avx_vnni<G, 3>, kernel_avx_vnni<G, 4>>;
template <int G, auto Unpack>
constexpr auto gemm_avx512_vnni =
    gemm_unpacked<G, 16, Unpack, kernel_avx512_vnni<G, 1>, kernel_avx512_vnni<G, 2>, kernel_avx512_vnni<G, 3>,
                  kernel_avx512_vnni<G, 4>, kernel_avx512_vnni<G, 5>, kernel_avx512_vnni<G, 6>>;

}  // namespace
}  // namespace unpacked

void add_unpacked_kernels(KernelTable& t, R8Dot dot) {
  using namespace unpacked;
  switch (dot) {
    case R8Dot::Madd:  // vpmaddubsw sums in 16 bits: the group kernels stay
      break;
    case R8Dot::AvxVnni:
      slot(t, TensorType::Q4_K_R8).gemm = gemm_avx_vnni<32, unpack_q4_k_r8<8>>;
      slot(t, TensorType::Q6_K_R8).gemm = gemm_avx_vnni<16, unpack_q6_k_r8<8>>;
      slot(t, TensorType::Q5_K).gemm = gemm_avx_vnni<32, unpack_q5_k_rows<8>>;
      slot(t, TensorType::Q3_K_R8).gemm = gemm_avx_vnni<16, unpack_q3_k_r8<8>>;
      slot(t, TensorType::Q2_K_R8).gemm = gemm_avx_vnni<16, unpack_q2_k_r8<8>>;
      slot(t, TensorType::IQ4_XS_R8).gemm = gemm_avx_vnni<32, unpack_iq4_xs_r8<8>>;
      break;
    case R8Dot::Avx512Vnni:
      slot(t, TensorType::Q4_K_R8).gemm = gemm_avx512_vnni<32, unpack_q4_k_r8<16>>;
      slot(t, TensorType::Q6_K_R8).gemm = gemm_avx512_vnni<16, unpack_q6_k_r8<16>>;
      slot(t, TensorType::Q6_K).gemm = gemm_avx512_vnni<16, unpack_q6_k_rows<16>>;
      slot(t, TensorType::Q5_K).gemm = gemm_avx512_vnni<32, unpack_q5_k_rows<16>>;
      slot(t, TensorType::Q3_K_R8).gemm = gemm_avx512_vnni<16, unpack_q3_k_r8<16>>;
      slot(t, TensorType::Q2_K_R8).gemm = gemm_avx512_vnni<16, unpack_q2_k_r8<16>>;
      slot(t, TensorType::IQ4_XS_R8).gemm = gemm_avx512_vnni<32, unpack_iq4_xs_r8<16>>;
      break;
  }
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_X86
