// AVX2 blocked matrix product of IQ4_XS with Q8_K activations (gemm.h: tiles, PanelIQ4). Rows are unpacked
// into code book values by the portable packer; a 3 × 3 tile sums |v|·(x with v's sign) per sub-block with
// vpmaddubsw (pairs <= 2·127·127), times the sub-block's scale ls − 32 with vpmaddwd, exactly in int32
// per super-block, then one FMA with d·d_x: the integer sums equal vec_dot's, the float scaling and
// accumulation order differ (float rounding).
#include "quant/kernels.h"

#if FOLIO_QUANT_X86

#include "quant/avx2-common.h"
#include "quant/blocks.h"
#include "quant/gemm.h"

namespace folio::quant {
namespace avx2 {
namespace {

template <int RM, int RN>
struct TileIQ4 {
  FOLIO_AVX2 static void run(const TileArgs& a) {
    const int64_t nb = a.k / QK_K;
    __m256 acc[RM][RN];
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ8_K* xb[RN];
      for (int j = 0; j < RN; ++j) xb[j] = reinterpret_cast<const BlockQ8_K*>(a.x + j * a.ldx) + b;
      const PanelIQ4* wb[RM];
      for (int i = 0; i < RM; ++i) wb[i] = reinterpret_cast<const PanelIQ4*>(a.w + i * a.ldw) + b;
      __m256i isum[RM][RN];
      for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) isum[i][j] = _mm256_setzero_si256();
      for (int s = 0; s < QK_K / QK; ++s) {
        __m256i xq[RN];
        for (int j = 0; j < RN; ++j) xq[j] = load256(xb[j]->qs + QK * s);
        for (int i = 0; i < RM; ++i) {
          const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(wb[i]->v + QK * s));
          const __m256i q = _mm256_abs_epi8(v);
          const __m256i sc = _mm256_set1_epi16(wb[i]->sc[s]);
          for (int j = 0; j < RN; ++j) {
            const __m256i p = _mm256_maddubs_epi16(q, _mm256_sign_epi8(xq[j], v));
            isum[i][j] = _mm256_add_epi32(isum[i][j], _mm256_madd_epi16(p, sc));
          }
        }
      }
      for (int j = 0; j < RN; ++j) {
        for (int i = 0; i < RM; ++i) {
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][j]), _mm256_set1_ps(wb[i]->d * xb[j]->d), acc[i][j]);
        }
      }
    }
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) a.y[j * a.ldy + i] = hsum(acc[i][j]);
  }
};
const TileTable<TileIQ4, 3, 3> kTilesIQ4;

FOLIO_GEMM(gemm_iq4_xs, kTilesIQ4, pack_iq4_xs_portable, size_t(k / QK_K) * sizeof(PanelIQ4), nullptr, 0)

}  // namespace
}  // namespace avx2

void add_avx2_iq4_gemm(KernelTable& t) { slot(t, TensorType::IQ4_XS).gemm = avx2::gemm_iq4_xs; }

}  // namespace folio::quant

#endif  // FOLIO_QUANT_X86
