// Element-wise math written so that the compiler vectorises it (the C library's exp does not), and the
// attribute that compiles a function for AVX-512 and AVX2 as well as the baseline, picked at load time.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#define FOLIO_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define FOLIO_VECTOR_CLONES
#endif

namespace folio::cpu {

// exp(x) for x <= 0 (attention scores minus their running max; silu's e^−|g|), to about 2e-7 relative:
// 2^n · p(r) with r = x − n·ln 2 in [−ln2/2, ln2/2] and p a degree-6 Taylor polynomial; below −87 it is 0.
// Written element-wise over an array so that it vectorises (std::exp does not).
inline void exp_below_zero(float* __restrict x, int n) {
  for (int i = 0; i < n; i++) {
    float v = x[i];
    const bool tiny = v < -87.0f;
    v = tiny ? -87.0f : v;
    const float fn = std::nearbyint(v * 1.44269504088896341f);
    const float r = (v - fn * 0.693145751953125f) - fn * 1.42860682030941723212e-6f;
    float p = 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const int32_t bits = (int32_t(fn) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, 4);
    x[i] = tiny ? 0.0f : p * scale;
  }
}

}  // namespace folio::cpu
