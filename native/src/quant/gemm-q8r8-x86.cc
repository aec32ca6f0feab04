// x86 kernels of Q8_0_R8 (repack.h; layout in blocks.h, BlockQ8_0x8): as gemm-r8-x86.cc does for
// Q4_K_R8, the 8 rows of a group in the 8 32-bit lanes of one 256-bit register. Per block, 8 vectors of
// weights (quad e of the 8 rows), each multiplied by the token's activation bytes 4e .. 4e + 3 broadcast
// to every lane; the block's 8 integer sums times the rows' d and the token's d into 8 float
// accumulators; 8 outputs stored at the end, no horizontal sums (the Q8_0 kernels need one per row and
// token).
//
// Signed weights times signed activations, two ways, both exact:
//  - the sign trick (matrix-vector products, and plain AVX2's blocked one): |w| as unsigned bytes times x
//    with w's sign, right for every int8 w and every x in -127..127 (what the Q8_0 quantizer gives).
//    vpmaddubsw's pairs fit in int16 (2·128·127), vpmaddwd by ones takes them to int32; vpdpbusd (VNNI)
//    does both in one.
//  - the bias (blocked product with VNNI): (w + 128)·x with vpdpbusd, starting from −128·Σx of the
//    block, which is computed once per call for every token and block, with the tokens' d as floats:
//    per vector and token one vpdpbusd and a broadcast load, where the sign trick needs a vpsignb too.
#include "quant/kernels.h"

#if FOLIO_QUANT_X86

#include <algorithm>
#include <cstring>

#include "quant/avx2-common.h"
#include "quant/blocks.h"
#include "quant/gemm.h"
#include "quant/r8-x86.h"

namespace folio::quant {
namespace q8r8 {
namespace {

using avx2::h2f;
using avx2::hsum_i32;
using namespace r8x86;  // (and avx2::load128, load256)

#define FOLIO_Q8R8_AVX512_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")))
#define FOLIO_Q8R8_AVX512_VNNI_INLINE \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni"), always_inline)) inline

// acc += per lane Σ of the 4 products u·s (u unsigned, s signed bytes).
FOLIO_AVX2_INLINE __m256i dot_madd(__m256i acc, __m256i u, __m256i s) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}
FOLIO_AVX_VNNI_INLINE __m256i dot_avx_vnni(__m256i acc, __m256i u, __m256i s) { return FOLIO_DPBUSD256(acc, u, s); }
FOLIO_Q8R8_AVX512_VNNI_INLINE __m256i dot_avx512_vnni(__m256i acc, __m256i u, __m256i s) {
  return _mm256_dpbusd_epi32(acc, u, s);
}

// y[t·ldy + r] for the 8 rows r of the group at w (nb blocks) and NT tokens, by the sign trick. (Macros,
// not templates, so that each copy is compiled for its own target, as in gemm-r8-x86.cc.)
#define FOLIO_Q8R8_SIGN_BODY(DOT)                                                                                     \
  const BlockQ8_0x8* blk = reinterpret_cast<const BlockQ8_0x8*>(w);                                                   \
  __m256 acc[NT];                                                                                                     \
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();                                                          \
  for (int64_t b = 0; b < nb; ++b) {                                                                                  \
    const BlockQ8_0x8& g = blk[b];                                                                                    \
    const BlockQ8_0* xb[NT];                                                                                          \
    __m256i isum[NT];                                                                                                 \
    for (int t = 0; t < NT; ++t)                                                                                      \
      xb[t] = reinterpret_cast<const BlockQ8_0*>(x + t * ldx) + b, isum[t] = _mm256_setzero_si256();                  \
    for (int e = 0; e < 8; ++e) {                                                                                     \
      const __m256i q = load256(g.qs[e]), aq = _mm256_abs_epi8(q);                                                    \
      for (int t = 0; t < NT; ++t) isum[t] = DOT(isum[t], aq, _mm256_sign_epi8(broadcast4(xb[t]->qs + 4 * e), q));    \
    }                                                                                                                 \
    const __m256 d = _mm256_cvtph_ps(load128(g.d));                                                                   \
    for (int t = 0; t < NT; ++t)                                                                                      \
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, _mm256_set1_ps(h2f(xb[t]->d))), acc[t]); \
  }                                                                                                                   \
  for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);

template <int NT>
FOLIO_AVX2 void sign_madd(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y, int64_t ldy) {
  FOLIO_Q8R8_SIGN_BODY(dot_madd)
}
template <int NT>
FOLIO_AVX_VNNI void sign_avx_vnni(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y, int64_t ldy) {
  FOLIO_Q8R8_SIGN_BODY(dot_avx_vnni)
}
template <int NT>
FOLIO_Q8R8_AVX512_VNNI void sign_avx512_vnni(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, float* y,
                                             int64_t ldy) {
  FOLIO_Q8R8_SIGN_BODY(dot_avx512_vnni)
}
#undef FOLIO_Q8R8_SIGN_BODY

// ---------------------------------------------------------------------------------------------------
// The blocked product with VNNI: per token and block, its d and −128·Σx (prep), then the bias kernel.

struct XPrep {
  float d;      // the activation block's d
  int32_t neg;  // −128·Σ of its 32 quants: where vpdpbusd of (w + 128) with x starts to give Σ w·x
};

FOLIO_AVX2 void prep(int64_t nb, const uint8_t* x, size_t ldx, int64_t n, XPrep* dst) {
  const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  for (int64_t t = 0; t < n; ++t) {
    const BlockQ8_0* xb = reinterpret_cast<const BlockQ8_0*>(x + size_t(t) * ldx);
    for (int64_t b = 0; b < nb; ++b) {
      const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, load256(xb[b].qs)), ones16);
      dst[t * nb + b] = {h2f(xb[b].d), -128 * hsum_i32(s)};
    }
  }
}

// The prep of n tokens at x, in a buffer of this thread's own: computed once per product for the token
// block a thread works on, not once per block of rows (the driver calls gemm for each), and kept for the
// products that share the converted activations (gemm_input_id).
const XPrep* cached_prep(int64_t nb, const uint8_t* x, size_t ldx, int64_t n) {
  struct Key {
    uint64_t id = 0;
    const uint8_t* x = nullptr;
    int64_t nb = 0, n = 0;
  };
  static thread_local Key key;
  XPrep* xs = reinterpret_cast<XPrep*>(thread_buffer<2>(size_t(n * nb) * sizeof(XPrep)));
  const uint64_t id = gemm_input_id();
  if (id == 0 || key.id != id || key.x != x || key.nb != nb || key.n != n) {
    prep(nb, x, ldx, n, xs);
    key = {id, x, nb, n};
  }
  return xs;
}

// y[t·ldy + r] for the 8 rows of the group at w and NT tokens (x, ldx apart; their prep at xs, ldxs
// apart).
#define FOLIO_Q8R8_BIAS_BODY(DOT)                                                                                     \
  const BlockQ8_0x8* blk = reinterpret_cast<const BlockQ8_0x8*>(w);                                                   \
  const __m256i bias = _mm256_set1_epi8(char(0x80));                                                                  \
  __m256 acc[NT];                                                                                                     \
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();                                                          \
  for (int64_t b = 0; b < nb; ++b) {                                                                                  \
    const BlockQ8_0x8& g = blk[b];                                                                                    \
    const int8_t* xq[NT];                                                                                             \
    __m256i isum[NT];                                                                                                 \
    for (int t = 0; t < NT; ++t)                                                                                      \
      xq[t] = (reinterpret_cast<const BlockQ8_0*>(x + t * ldx) + b)->qs,                                              \
      isum[t] = _mm256_set1_epi32(xs[t * ldxs + b].neg);                                                              \
    for (int e = 0; e < 8; ++e) {                                                                                     \
      const __m256i u = _mm256_xor_si256(load256(g.qs[e]), bias);                                                     \
      for (int t = 0; t < NT; ++t) isum[t] = DOT(isum[t], u, broadcast4(xq[t] + 4 * e));                              \
    }                                                                                                                 \
    const __m256 d = _mm256_cvtph_ps(load128(g.d));                                                                   \
    for (int t = 0; t < NT; ++t)                                                                                      \
      acc[t] =                                                                                                        \
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, _mm256_set1_ps(xs[t * ldxs + b].d)), acc[t]); \
  }                                                                                                                   \
  for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ldy, acc[t]);

using BiasFn = void (*)(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, const XPrep* xs, int64_t ldxs,
                        float* y, int64_t ldy);
template <int NT>
FOLIO_AVX_VNNI void bias_avx_vnni(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, const XPrep* xs,
                                  int64_t ldxs, float* y, int64_t ldy) {
  FOLIO_Q8R8_BIAS_BODY(dot_avx_vnni)
}
#undef FOLIO_Q8R8_BIAS_BODY

// ---------------------------------------------------------------------------------------------------
// The blocked product with AVX512-VNNI: two groups (16 rows) in the 16 lanes of a 512-bit vector, biased
// once per call into a thread buffer, so that per token and block there are 8 vpdpbusd for 16 rows and one
// scaling (on 256-bit vectors: 8 for 8 rows, the bias per vector and token pass).

struct Q8Unpacked16 {
  uint8_t q[8][64];  // [quad e][row r][k]: element 4e + k of row r, + 128
  float d[16];       // [r]
};
static_assert(sizeof(Q8Unpacked16) % 64 == 0);  // whole 512-bit vectors

// 8 rows (a group) into the half h of each block.
FOLIO_AVX2 void unpack16(const uint8_t* w, int64_t nb, Q8Unpacked16* u, int h) {
  const BlockQ8_0x8* blk = reinterpret_cast<const BlockQ8_0x8*>(w);
  const __m256i bias = _mm256_set1_epi8(char(0x80));
  for (int64_t b = 0; b < nb; ++b) {
    for (int e = 0; e < 8; ++e)
      _mm256_store_si256(reinterpret_cast<__m256i*>(u[b].q[e] + 32 * h), _mm256_xor_si256(load256(blk[b].qs[e]), bias));
    _mm256_store_ps(u[b].d + 8 * h, _mm256_cvtph_ps(load128(blk[b].d)));
  }
}

#define FOLIO_Q8R8_AVX512_VNNI512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")))

// y[t·ldy + r] for the 16 rows of the unpacked blocks at w and NT tokens (x, ldx apart; their prep at xs,
// ldxs apart).
template <int NT>
FOLIO_Q8R8_AVX512_VNNI512 void bias16(int64_t nb, const uint8_t* w, const uint8_t* x, size_t ldx, const XPrep* xs,
                                      int64_t ldxs, float* y, int64_t ldy) {
  const Q8Unpacked16* blk = reinterpret_cast<const Q8Unpacked16*>(w);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const Q8Unpacked16& g = blk[b];
    const int8_t* xq[NT];
    __m512i isum[NT];
    for (int t = 0; t < NT; ++t)
      xq[t] = (reinterpret_cast<const BlockQ8_0*>(x + t * ldx) + b)->qs,
      isum[t] = _mm512_set1_epi32(xs[t * ldxs + b].neg);
    for (int e = 0; e < 8; ++e) {
      const __m512i u = _mm512_load_si512(g.q[e]);
      for (int t = 0; t < NT; ++t) isum[t] = _mm512_dpbusd_epi32(isum[t], u, _mm512_set1_epi32(bytes4(xq[t] + 4 * e)));
    }
    const __m512 d = _mm512_load_ps(g.d);
    for (int t = 0; t < NT; ++t)
      acc[t] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, _mm512_set1_ps(xs[t * ldxs + b].d)), acc[t]);
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ldy, acc[t]);
}

// ---------------------------------------------------------------------------------------------------

// Kernels::gemv from the sign-trick group functions: the rows of the range, three tokens at a time.
template <GemvRowFn F1, GemvRowFn F2, GemvRowFn F3>
void gemv(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m,
          int64_t n) {
  static constexpr GemvRowFn fns[3] = {F1, F2, F3};
  gemv_by_rows<8>(fns, k / QK, w, ldw, x, ldx, y, ldy, m, n);
}

// Kernels::gemm without VNNI: group after group against all n tokens while its weights are in L1.
template <GemvRowFn F1, GemvRowFn F2, GemvRowFn F3>
void gemm_sign(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m,
               int64_t n) {
  for (int64_t r = 0; r < m; r += 8)
    gemv<F1, F2, F3>(k, static_cast<const uint8_t*>(w) + size_t(r) * ldw, ldw, x, ldx, y + r, ldy, 8, n);
}

// Kernels::gemm with VNNI: the tokens' prep once, then group after group against all n tokens, NT =
// sizeof...(Fns) at a time (Fns: the kernels for 1 .. NT tokens).
template <BiasFn... Fns>
void gemm_bias(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m,
               int64_t n) {
  static constexpr BiasFn fns[] = {Fns...};
  constexpr int64_t NT = sizeof...(Fns);
  const int64_t nb = k / QK;
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  const XPrep* xs = cached_prep(nb, xb, ldx, n);
  for (int64_t r = 0; r < m; r += 8) {
    const uint8_t* wg = static_cast<const uint8_t*>(w) + size_t(r) * ldw;
    for (int64_t t0 = 0; t0 < n; t0 += NT) {
      const int nt = int(std::min<int64_t>(NT, n - t0));
      fns[nt - 1](nb, wg, xb + size_t(t0) * ldx, ldx, xs + t0 * nb, nb, y + t0 * ldy + r, ldy);
    }
  }
}

// Kernels::gemm with AVX512-VNNI: the tokens' prep once, then 16 rows after 16 (a missing second group
// repeats the first, its outputs dropped), unpacked once and passed by all n tokens NT at a time.
template <BiasFn... Fns>
void gemm_bias16(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m,
                 int64_t n) {
  static constexpr BiasFn fns[] = {Fns...};
  constexpr int64_t NT = sizeof...(Fns);
  const int64_t nb = k / QK;
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  const XPrep* xs = cached_prep(nb, xb, ldx, n);
  Q8Unpacked16* u = reinterpret_cast<Q8Unpacked16*>(thread_buffer<0>(size_t(nb) * sizeof(Q8Unpacked16)));
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  for (int64_t r = 0; r < m; r += 16) {
    const int64_t rows = std::min<int64_t>(16, m - r);
    unpack16(wb + size_t(r) * ldw, nb, u, 0);
    unpack16(wb + size_t(std::min(r + 8, m - 8)) * ldw, nb, u, 1);
    r8x86::NextRows next(wb + size_t(std::min(r + 16, m)) * ldw, wb + size_t(std::min(r + 32, m)) * ldw,
                         (n + NT - 1) / NT);
    for (int64_t t0 = 0; t0 < n; t0 += NT) {
      next.step();
      const int nt = int(std::min<int64_t>(NT, n - t0));
      const uint8_t* ub = reinterpret_cast<const uint8_t*>(u);
      if (rows == 16) {
        fns[nt - 1](nb, ub, xb + size_t(t0) * ldx, ldx, xs + t0 * nb, nb, y + t0 * ldy + r, ldy);
      } else {
        float out[NT * 16];
        fns[nt - 1](nb, ub, xb + size_t(t0) * ldx, ldx, xs + t0 * nb, nb, out, 16);
        for (int t = 0; t < nt; ++t) std::memcpy(y + (t0 + t) * ldy + r, out + 16 * t, size_t(rows) * sizeof(float));
      }
    }
  }
}

}  // namespace
}  // namespace q8r8

void add_q8_0_r8_kernels(KernelTable& t, R8Dot dot) {
  using namespace q8r8;
  Kernels& k = slot(t, TensorType::Q8_0_R8);
  switch (dot) {
    case R8Dot::Madd:
      k.gemv = gemv<sign_madd<1>, sign_madd<2>, sign_madd<3>>;
      k.gemm = gemm_sign<sign_madd<1>, sign_madd<2>, sign_madd<3>>;
      break;
    // NT = 6 tokens a pass with AVX-512 (Zen 4, 2048 columns: 10% faster than 4, and as fast as 8);
    // AVX-VNNI keeps 4, which leaves room in its 16 registers (not measured: no such CPU here).
    case R8Dot::AvxVnni:
      k.gemv = gemv<sign_avx_vnni<1>, sign_avx_vnni<2>, sign_avx_vnni<3>>;
      k.gemm = gemm_bias<bias_avx_vnni<1>, bias_avx_vnni<2>, bias_avx_vnni<3>, bias_avx_vnni<4>>;
      break;
    case R8Dot::Avx512Vnni:
      k.gemv = gemv<sign_avx512_vnni<1>, sign_avx512_vnni<2>, sign_avx512_vnni<3>>;
      k.gemm = gemm_bias16<bias16<1>, bias16<2>, bias16<3>, bias16<4>, bias16<5>, bias16<6>>;
      break;
  }
}

}  // namespace folio::quant

#endif  // FOLIO_QUANT_X86
