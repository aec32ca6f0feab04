// Helpers shared by the NEON kernel files (quant-neon*.cc, gemm-neon.cc); included only there, inside their
// FOLIO_QUANT_NEON check. Tested under qemu on x86 (docs/neon-testing.md).
#pragma once
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

// The SDOT instruction (Armv8.2 dotprod) for one function, so that the plain build still runs on Armv8.0.
#if defined(__clang__)
#define FOLIO_DOTPROD __attribute__((target("dotprod")))
#else
#define FOLIO_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

namespace folio::quant::neon_common {

// fp16 -> f32 in one FCVT (exact, like fp16_to_f32).
inline float h2f(uint16_t h) {
  __fp16 v;
  std::memcpy(&v, &h, 2);
  return float(v);
}

// Σ a·b of 16 signed bytes added into 4 int32 lanes: widening multiplies and pairwise adds, or one SDOT.
inline int32x4_t dot16_plain(int32x4_t acc, int8x16_t a, int8x16_t b) {
  acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  return vpadalq_s16(acc, vmull_high_s8(a, b));
}
FOLIO_DOTPROD inline int32x4_t dot16_sdot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }

}  // namespace folio::quant::neon_common
