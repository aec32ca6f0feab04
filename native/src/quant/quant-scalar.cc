// The scalar reference kernels: plain loops that follow each block layout literally. Every SIMD kernel
// is tested against these. Layouts and reference formulas are ggml's (ggml-common.h, ggml-quants.c);
// the struct definitions with their byte maps are in blocks.h.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"

namespace folio::quant {
namespace {

float h2f(uint16_t h) { return fp16_to_f32(h); }
uint16_t f2h(float f) { return f32_to_fp16(f); }

// Round half to even (ggml's nearest_int), used by the K-quant quantizers.
int round_even(float v) { return int(std::nearbyint(v)); }

// ---------------------------------------------------------------------------------------------------
// F32, F16, BF16: one element per "block". The dot products accumulate in double: the reference should
// not add rounding of its own.

void dequantize_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
void quantize_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
float vec_dot_f32(int64_t n, const void* w, const void* x) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(a[i]) * double(b[i]);
  return float(sum);
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
}
void quantize_f16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(src[i]);
}
float vec_dot_f16(int64_t n, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(fp16_to_f32(a[i])) * double(fp16_to_f32(b[i]));
  return float(sum);
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
}
void quantize_bf16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}
float vec_dot_bf16(int64_t n, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const uint16_t* b = static_cast<const uint16_t*>(x);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(bf16_to_f32(a[i])) * double(bf16_to_f32(b[i]));
  return float(sum);
}

// ---------------------------------------------------------------------------------------------------
// Q8_0: { fp16 d; int8 qs[32] }, x[i] = d * qs[i].
// Quantize: d = amax / 127, q = round-half-away(x / d). This is also the activation format of
// Q4_0/Q5_0/Q8_0 dot products.

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float d = h2f(b[ib].d);
    for (int i = 0; i < QK; ++i) dst[ib * QK + i] = float(b[ib].qs[i]) * d;
  }
}

void quantize_q8_0(const float* src, void* dst, int64_t n) {
  for (int64_t ib = 0; ib < n / QK; ++ib)
    quantize_block_q8_0(src + ib * QK, static_cast<uint8_t*>(dst) + size_t(ib) * sizeof(BlockQ8_0), QK);
}

float vec_dot_q8_0(int64_t n, const void* w, const void* x) {
  const BlockQ8_0* a = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    int isum = 0;
    for (int i = 0; i < QK; ++i) isum += int(a[ib].qs[i]) * int(b[ib].qs[i]);
    sum += float(isum) * (h2f(a[ib].d) * h2f(b[ib].d));
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------------
// Q8_1: { fp16 d; fp16 s; int8 qs[32] }, x[i] = d * qs[i], s = d * Σ qs. Activations of Q4_1/Q5_1.

void dequantize_q8_1(const void* src, float* dst, int64_t n) {
  const BlockQ8_1* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float d = h2f(b[ib].d);
    for (int i = 0; i < QK; ++i) dst[ib * QK + i] = float(b[ib].qs[i]) * d;
  }
}

void quantize_q8_1(const float* src, void* dst, int64_t n) {
  BlockQ8_1* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float* x = src + ib * QK;
    float amax = 0;
    for (int i = 0; i < QK; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int i = 0; i < QK; ++i) {
      b[ib].qs[i] = int8_t(std::round(x[i] * id));
      sum += b[ib].qs[i];
    }
    b[ib].d = f2h(d);
    b[ib].s = f2h(float(sum) * d);
  }
}

// ---------------------------------------------------------------------------------------------------
// Q4_0: { fp16 d; u8 qs[16] }, element j = low nibble of qs[j], element j+16 = high nibble;
// x = d * (q - 8). Quantize: d = (the value of largest magnitude) / -8, so that value maps to q = 0.

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float d = h2f(b[ib].d);
    float* y = dst + ib * QK;
    for (int j = 0; j < QK / 2; ++j) {
      y[j] = float((b[ib].qs[j] & 15) - 8) * d;
      y[j + QK / 2] = float((b[ib].qs[j] >> 4) - 8) * d;
    }
  }
}

// The value of largest magnitude (the first one on ties), keeping its sign.
float signed_absmax(const float* x, int n) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

void quantize_q4_0(const float* src, void* dst, int64_t n) {
  for (int64_t ib = 0; ib < n / QK; ++ib)
    quantize_block_q4_0(src + ib * QK, static_cast<uint8_t*>(dst) + size_t(ib) * sizeof(BlockQ4_0), QK);
}

float vec_dot_q4_0(int64_t n, const void* w, const void* x) {
  const BlockQ4_0* a = static_cast<const BlockQ4_0*>(w);
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    int isum = 0;
    for (int j = 0; j < QK / 2; ++j) {
      isum += ((a[ib].qs[j] & 15) - 8) * b[ib].qs[j];
      isum += ((a[ib].qs[j] >> 4) - 8) * b[ib].qs[j + QK / 2];
    }
    sum += float(isum) * (h2f(a[ib].d) * h2f(b[ib].d));
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------------
// Q4_1: { fp16 d; fp16 m; u8 qs[16] }, nibbles as Q4_0, x = d * q + m. Quantize: m = min, d = range/15.
// Dot with Q8_1: Σ (d q + m)(dx qx) = d dx Σ q qx + m (dx Σ qx) = d dx Σ q qx + m s.

void dequantize_q4_1(const void* src, float* dst, int64_t n) {
  const BlockQ4_1* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float d = h2f(b[ib].d), m = h2f(b[ib].m);
    float* y = dst + ib * QK;
    for (int j = 0; j < QK / 2; ++j) {
      y[j] = float(b[ib].qs[j] & 15) * d + m;
      y[j + QK / 2] = float(b[ib].qs[j] >> 4) * d + m;
    }
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t n) {
  BlockQ4_1* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float* x = src + ib * QK;
    const float lo = *std::min_element(x, x + QK), hi = *std::max_element(x, x + QK);
    const float d = (hi - lo) / 15;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[ib].d = f2h(d);
    b[ib].m = f2h(lo);
    for (int j = 0; j < QK / 2; ++j) {
      const int q0 = std::min(15, int((x[j] - lo) * id + 0.5f));
      const int q1 = std::min(15, int((x[j + QK / 2] - lo) * id + 0.5f));
      b[ib].qs[j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

float vec_dot_q4_1(int64_t n, const void* w, const void* x) {
  const BlockQ4_1* a = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* b = static_cast<const BlockQ8_1*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    int isum = 0;
    for (int j = 0; j < QK / 2; ++j) {
      isum += (a[ib].qs[j] & 15) * b[ib].qs[j];
      isum += (a[ib].qs[j] >> 4) * b[ib].qs[j + QK / 2];
    }
    sum += float(isum) * (h2f(a[ib].d) * h2f(b[ib].d)) + h2f(a[ib].m) * h2f(b[ib].s);
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------------
// Q5_0: { fp16 d; u32 qh; u8 qs[16] }, q = nibble (as Q4_0) | bit i of qh << 4, x = d * (q - 16).
// Q5_1: { fp16 d; fp16 m; u32 qh; u8 qs[16] }, x = d * q + m.

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 5-bit values of a Q5 block.
void unpack_q5(const uint8_t* qs, const uint8_t* qh_bytes, int q[QK]) {
  const uint32_t qh = load_u32(qh_bytes);
  for (int j = 0; j < QK / 2; ++j) {
    q[j] = (qs[j] & 15) | int(((qh >> j) & 1) << 4);
    q[j + QK / 2] = (qs[j] >> 4) | int(((qh >> (j + QK / 2)) & 1) << 4);
  }
}

void pack_q5(const int q[QK], uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < QK / 2; ++j) {
    qs[j] = uint8_t((q[j] & 15) | ((q[j + QK / 2] & 15) << 4));
    qh |= uint32_t(q[j] >> 4) << j;
    qh |= uint32_t(q[j + QK / 2] >> 4) << (j + QK / 2);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  const BlockQ5_0* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    int q[QK];
    unpack_q5(b[ib].qs, b[ib].qh, q);
    const float d = h2f(b[ib].d);
    for (int i = 0; i < QK; ++i) dst[ib * QK + i] = float(q[i] - 16) * d;
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t n) {
  BlockQ5_0* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float* x = src + ib * QK;
    const float d = signed_absmax(x, QK) / -16;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[ib].d = f2h(d);
    int q[QK];
    for (int i = 0; i < QK; ++i) q[i] = std::min(31, int(x[i] * id + 16.5f));
    pack_q5(q, b[ib].qs, b[ib].qh);
  }
}

float vec_dot_q5_0(int64_t n, const void* w, const void* x) {
  const BlockQ5_0* a = static_cast<const BlockQ5_0*>(w);
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    int q[QK];
    unpack_q5(a[ib].qs, a[ib].qh, q);
    int isum = 0;
    for (int i = 0; i < QK; ++i) isum += (q[i] - 16) * b[ib].qs[i];
    sum += float(isum) * (h2f(a[ib].d) * h2f(b[ib].d));
  }
  return sum;
}

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
  const BlockQ5_1* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    int q[QK];
    unpack_q5(b[ib].qs, b[ib].qh, q);
    const float d = h2f(b[ib].d), m = h2f(b[ib].m);
    for (int i = 0; i < QK; ++i) dst[ib * QK + i] = float(q[i]) * d + m;
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t n) {
  BlockQ5_1* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float* x = src + ib * QK;
    const float lo = *std::min_element(x, x + QK), hi = *std::max_element(x, x + QK);
    const float d = (hi - lo) / 31;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b[ib].d = f2h(d);
    b[ib].m = f2h(lo);
    int q[QK];
    for (int i = 0; i < QK; ++i) q[i] = std::min(31, int((x[i] - lo) * id + 0.5f));
    pack_q5(q, b[ib].qs, b[ib].qh);
  }
}

float vec_dot_q5_1(int64_t n, const void* w, const void* x) {
  const BlockQ5_1* a = static_cast<const BlockQ5_1*>(w);
  const BlockQ8_1* b = static_cast<const BlockQ8_1*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    int q[QK];
    unpack_q5(a[ib].qs, a[ib].qh, q);
    int isum = 0;
    for (int i = 0; i < QK; ++i) isum += q[i] * b[ib].qs[i];
    sum += float(isum) * (h2f(a[ib].d) * h2f(b[ib].d)) + h2f(a[ib].m) * h2f(b[ib].s);
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------------
// Q8_K: { f32 d; int8 qs[256]; int16 bsums[16] }, x = d * q. Activations of the K-quants.
// Quantize (ggml's rule): the value of largest magnitude maps to -127, q = round-half-even(x * -127 / max),
// d = 1 / (-127 / max). bsums[g] = Σ q over elements 16g .. 16g+15.

void dequantize_q8_k(const void* src, float* dst, int64_t n) {
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    for (int i = 0; i < QK_K; ++i) dst[ib * QK_K + i] = b[ib].d * float(b[ib].qs[i]);
  }
}

void quantize_q8_k(const float* src, void* dst, int64_t n) {
  BlockQ8_K* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const float* x = src + ib * QK_K;
    const float max = signed_absmax(x, QK_K);
    if (max == 0) {
      std::memset(&b[ib], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int i = 0; i < QK_K; ++i) b[ib].qs[i] = int8_t(std::min(127, round_even(iscale * x[i])));
    for (int g = 0; g < QK_K / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += b[ib].qs[16 * g + i];
      b[ib].bsums[g] = int16_t(sum);
    }
    b[ib].d = 1 / iscale;
  }
}

// ---------------------------------------------------------------------------------------------------
// Q4_K / Q5_K: 8 sub-blocks of 32 elements, each with a 6-bit scale sc[j] and a 6-bit min m[j]
// (unpack_scales_k4 in blocks.h); x = d * sc[j] * q - dmin * m[j].
// Dot with Q8_K: Σ x·(dx qx) = d dx Σ_j sc[j] Σ q qx - dmin dx Σ_j m[j] Σ qx, and Σ qx over a
// sub-block is bsums[2j] + bsums[2j+1].

// The 256 unsigned quants of a Q4_K block in element order.
void unpack_q4_k(const BlockQ4_K& b, int q[QK_K]) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = b.qs[32 * c + l] & 15;
      q[64 * c + 32 + l] = b.qs[32 * c + l] >> 4;
    }
  }
}

void unpack_q5_k(const BlockQ5_K& b, int q[QK_K]) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = (b.qs[32 * c + l] & 15) | (((b.qh[l] >> (2 * c)) & 1) << 4);
      q[64 * c + 32 + l] = (b.qs[32 * c + l] >> 4) | (((b.qh[l] >> (2 * c + 1)) & 1) << 4);
    }
  }
}

void dequantize_k4(const int q[QK_K], const uint8_t* scales, float d, float dmin, float* y) {
  uint8_t sc[8], mn[8];
  unpack_scales_k4(scales, sc, mn);
  for (int j = 0; j < 8; ++j) {
    const float dj = d * float(sc[j]), mj = dmin * float(mn[j]);
    for (int i = 0; i < 32; ++i) y[32 * j + i] = dj * float(q[32 * j + i]) - mj;
  }
}

float dot_k4(const int q[QK_K], const uint8_t* scales, float d, float dmin, const BlockQ8_K& x) {
  uint8_t sc[8], mn[8];
  unpack_scales_k4(scales, sc, mn);
  int isum = 0, msum = 0;
  for (int j = 0; j < 8; ++j) {
    int s = 0;
    for (int i = 0; i < 32; ++i) s += q[32 * j + i] * x.qs[32 * j + i];
    isum += sc[j] * s;
    msum += mn[j] * (x.bsums[2 * j] + x.bsums[2 * j + 1]);
  }
  return (d * x.d) * float(isum) - (dmin * x.d) * float(msum);
}

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
  const BlockQ4_K* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    unpack_q4_k(b[ib], q);
    dequantize_k4(q, b[ib].scales, h2f(b[ib].d), h2f(b[ib].dmin), dst + ib * QK_K);
  }
}

float vec_dot_q4_k(int64_t n, const void* w, const void* x) {
  const BlockQ4_K* a = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    unpack_q4_k(a[ib], q);
    sum += dot_k4(q, a[ib].scales, h2f(a[ib].d), h2f(a[ib].dmin), b[ib]);
  }
  return sum;
}

void dequantize_q5_k(const void* src, float* dst, int64_t n) {
  const BlockQ5_K* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    unpack_q5_k(b[ib], q);
    dequantize_k4(q, b[ib].scales, h2f(b[ib].d), h2f(b[ib].dmin), dst + ib * QK_K);
  }
}

float vec_dot_q5_k(int64_t n, const void* w, const void* x) {
  const BlockQ5_K* a = static_cast<const BlockQ5_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    unpack_q5_k(a[ib], q);
    sum += dot_k4(q, a[ib].scales, h2f(a[ib].d), h2f(a[ib].dmin), b[ib]);
  }
  return sum;
}

// Least-squares fit of x[0..n) ≈ scale * L + offset (n <= 32) with L in 0..nmax and offset <= 0 (stored as
// the positive min = -offset). A few step sizes around range / nmax are tried; each rounding is refined by
// least squares and the one with the least squared error wins. Returns the scale, sets *min.
float fit_scale_min(const float* x, int n, int nmax, float* min) {
  float lo = std::min(0.0f, *std::min_element(x, x + n));
  const float hi = *std::max_element(x, x + n);
  if (hi == lo) {
    *min = -lo;
    return 0;
  }
  float best_scale = (hi - lo) / float(nmax), best_off = lo, best_err = INFINITY;
  int L[32];
  for (int step = -10; step <= 10; ++step) {
    const float iscale = (float(nmax) + 0.1f * float(step)) / (hi - lo);
    float sl = 0, sl2 = 0, sx = 0, sxl = 0;
    for (int i = 0; i < n; ++i) {
      L[i] = std::clamp(round_even((x[i] - lo) * iscale), 0, nmax);
      sl += float(L[i]);
      sl2 += float(L[i] * L[i]);
      sx += x[i];
      sxl += x[i] * float(L[i]);
    }
    const float det = float(n) * sl2 - sl * sl;
    if (det <= 0) continue;
    float scale = (float(n) * sxl - sx * sl) / det;
    float off = (sl2 * sx - sl * sxl) / det;
    if (off > 0) {  // the format has no positive offset
      off = 0;
      scale = sxl / sl2;
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const float e = scale * float(L[i]) + off - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_scale = scale;
      best_off = off;
    }
  }
  *min = -best_off;
  return std::max(0.0f, best_scale);
}

// Chooses d, dmin and the 6-bit scales/mins of a Q4_K/Q5_K super-block, then the quants q[256] in
// 0..nmax against the stored (rounded) scales.
void quantize_k4(const float* x, int nmax, uint16_t* d_out, uint16_t* dmin_out, uint8_t scales[12], int q[QK_K]) {
  float sc[8], mn[8], max_sc = 0, max_mn = 0;
  for (int j = 0; j < 8; ++j) {
    sc[j] = fit_scale_min(x + 32 * j, 32, nmax, &mn[j]);
    max_sc = std::max(max_sc, sc[j]);
    max_mn = std::max(max_mn, mn[j]);
  }
  *d_out = f2h(max_sc / 63);
  *dmin_out = f2h(max_mn / 63);
  const float d = h2f(*d_out), dmin = h2f(*dmin_out);
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = uint8_t(d > 0 ? std::clamp(round_even(sc[j] / d), 0, 63) : 0);
    lm[j] = uint8_t(dmin > 0 ? std::clamp(round_even(mn[j] / dmin), 0, 63) : 0);
  }
  for (int j = 0; j < 4; ++j) {
    scales[j] = uint8_t(ls[j] | ((ls[j + 4] >> 4) << 6));
    scales[j + 4] = uint8_t(lm[j] | ((lm[j + 4] >> 4) << 6));
    scales[j + 8] = uint8_t((ls[j + 4] & 15) | ((lm[j + 4] & 15) << 4));
  }
  for (int j = 0; j < 8; ++j) {
    const float dj = d * float(ls[j]), mj = dmin * float(lm[j]);
    for (int i = 0; i < 32; ++i) {
      q[32 * j + i] = dj > 0 ? std::clamp(round_even((x[32 * j + i] + mj) / dj), 0, nmax) : 0;
    }
  }
}

void quantize_q4_k(const float* src, void* dst, int64_t n) {
  BlockQ4_K* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    quantize_k4(src + ib * QK_K, 15, &b[ib].d, &b[ib].dmin, b[ib].scales, q);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) b[ib].qs[32 * c + l] = uint8_t(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
    }
  }
}

void quantize_q5_k(const float* src, void* dst, int64_t n) {
  BlockQ5_K* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    quantize_k4(src + ib * QK_K, 31, &b[ib].d, &b[ib].dmin, b[ib].scales, q);
    std::memset(b[ib].qh, 0, sizeof b[ib].qh);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = q[64 * c + l], hi = q[64 * c + 32 + l];
        b[ib].qs[32 * c + l] = uint8_t((lo & 15) | ((hi & 15) << 4));
        b[ib].qh[l] |= uint8_t(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Q6_K: 16 groups of 16 elements with int8 scales; x = d * sc[g] * (q - 32), q in 0..63 split into
// ql (low 4 bits) and qh (high 2 bits), laid out as in blocks.h.
// Dot with Q8_K: d dx Σ_g sc[g] Σ (q - 32) qx.

void dequantize_q6_k(const void* src, float* dst, int64_t n) {
  const BlockQ6_K* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    unpack_q6_k(b[ib], q);
    const float d = h2f(b[ib].d);
    for (int g = 0; g < 16; ++g) {
      const float dg = d * float(b[ib].scales[g]);
      for (int i = 0; i < 16; ++i) dst[ib * QK_K + 16 * g + i] = dg * float(q[16 * g + i] - 32);
    }
  }
}

float vec_dot_q6_k(int64_t n, const void* w, const void* x) {
  const BlockQ6_K* a = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    unpack_q6_k(a[ib], q);
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += (q[16 * g + i] - 32) * b[ib].qs[16 * g + i];
      isum += a[ib].scales[g] * s;
    }
    sum += (h2f(a[ib].d) * b[ib].d) * float(isum);
  }
  return sum;
}

// Signed scale for a group of 16 with L in -half..half-1 (Q6_K: 32, Q3_K: 4): the value of largest
// magnitude maps to -half (the side with one more level); nearby step sizes are tried and the one whose
// least-squares scale explains most of the group (largest (Σ x L)² / Σ L²) wins.
float fit_scale_signed(const float* x, int half) {
  constexpr int n = 16;
  const float max = signed_absmax(x, n);
  if (max == 0) return 0;
  float best_scale = 0, best_fit = -1;
  for (int step = -9; step <= 9; ++step) {
    const float iscale = -(float(half) + 0.1f * float(step)) / max;
    float sxl = 0, sl2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(round_even(iscale * x[i]), -half, half - 1);
      sxl += x[i] * float(l);
      sl2 += float(l * l);
    }
    if (sl2 > 0 && sxl * sxl / sl2 > best_fit) {
      best_fit = sxl * sxl / sl2;
      best_scale = sxl / sl2;
    }
  }
  return best_scale;
}

void quantize_q6_k(const float* src, void* dst, int64_t n) {
  BlockQ6_K* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const float* x = src + ib * QK_K;
    float sc[16], max_sc = 0;
    for (int g = 0; g < 16; ++g) {
      sc[g] = fit_scale_signed(x + 16 * g, 32);
      if (std::fabs(sc[g]) > std::fabs(max_sc)) max_sc = sc[g];
    }
    std::memset(&b[ib], 0, sizeof(BlockQ6_K));
    if (max_sc == 0) continue;
    // The largest scale maps to -128, the end of int8 with one more level.
    b[ib].d = f2h(max_sc / -128);
    const float d = h2f(b[ib].d);
    int q[QK_K];
    for (int g = 0; g < 16; ++g) {
      b[ib].scales[g] = int8_t(d != 0 ? std::clamp(round_even(sc[g] / d), -128, 127) : 0);
      const float dg = d * float(b[ib].scales[g]);
      for (int i = 0; i < 16; ++i) {
        q[16 * g + i] = 32 + (dg != 0 ? std::clamp(round_even(x[16 * g + i] / dg), -32, 31) : 0);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const int* y = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        b[ib].ql[64 * h + l] = uint8_t((y[l] & 15) | ((y[l + 64] & 15) << 4));
        b[ib].ql[64 * h + l + 32] = uint8_t((y[l + 32] & 15) | ((y[l + 96] & 15) << 4));
        b[ib].qh[32 * h + l] =
            uint8_t((y[l] >> 4) | ((y[l + 32] >> 4) << 2) | ((y[l + 64] >> 4) << 4) | ((y[l + 96] >> 4) << 6));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Q2_K: 16 groups of 16 with a 4-bit scale sc[g] and a 4-bit min m[g]; x = d * sc[g] * q - dmin * m[g],
// q in 0..3 (blocks.h). Dot with Q8_K, as Q4_K per group: d dx Σ_g sc[g] Σ q qx - dmin dx Σ_g m[g] bsums[g].

// The 256 two-bit fields of a Q2_K/Q3_K qs[64] in element order.
void unpack_2bit(const uint8_t* qs, int q[QK_K]) {
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) q[128 * h + 32 * j + l] = (qs[32 * h + l] >> (2 * j)) & 3;
    }
  }
}

void pack_2bit(const int q[QK_K], uint8_t* qs) {
  std::memset(qs, 0, QK_K / 4);
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) qs[32 * h + l] |= uint8_t((q[128 * h + 32 * j + l] & 3) << (2 * j));
    }
  }
}

void dequantize_q2_k(const void* src, float* dst, int64_t n) {
  const BlockQ2_K* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    unpack_2bit(b[ib].qs, q);
    const float d = h2f(b[ib].d), dmin = h2f(b[ib].dmin);
    for (int g = 0; g < 16; ++g) {
      const float dg = d * float(b[ib].scales[g] & 15), mg = dmin * float(b[ib].scales[g] >> 4);
      for (int i = 0; i < 16; ++i) dst[ib * QK_K + 16 * g + i] = dg * float(q[16 * g + i]) - mg;
    }
  }
}

// Per group a least-squares scale and min over q in 0..3 (fit_scale_min); d and dmin map the largest of
// them to 15, and the quants are chosen again against the stored 4-bit scales.
void quantize_q2_k(const float* src, void* dst, int64_t n) {
  BlockQ2_K* b = static_cast<BlockQ2_K*>(dst);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const float* x = src + ib * QK_K;
    float sc[16], mn[16], max_sc = 0, max_mn = 0;
    for (int g = 0; g < 16; ++g) {
      sc[g] = fit_scale_min(x + 16 * g, 16, 3, &mn[g]);
      max_sc = std::max(max_sc, sc[g]);
      max_mn = std::max(max_mn, mn[g]);
    }
    b[ib].d = f2h(max_sc / 15);
    b[ib].dmin = f2h(max_mn / 15);
    const float d = h2f(b[ib].d), dmin = h2f(b[ib].dmin);
    int q[QK_K];
    for (int g = 0; g < 16; ++g) {
      const int ls = d > 0 ? std::clamp(round_even(sc[g] / d), 0, 15) : 0;
      const int lm = dmin > 0 ? std::clamp(round_even(mn[g] / dmin), 0, 15) : 0;
      b[ib].scales[g] = uint8_t(ls | (lm << 4));
      const float dg = d * float(ls), mg = dmin * float(lm);
      for (int i = 0; i < 16; ++i) q[16 * g + i] = dg > 0 ? std::clamp(round_even((x[16 * g + i] + mg) / dg), 0, 3) : 0;
    }
    pack_2bit(q, b[ib].qs);
  }
}

float vec_dot_q2_k(int64_t n, const void* w, const void* x) {
  const BlockQ2_K* a = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    unpack_2bit(a[ib].qs, q);
    int isum = 0, msum = 0;
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += q[16 * g + i] * b[ib].qs[16 * g + i];
      isum += (a[ib].scales[g] & 15) * s;
      msum += (a[ib].scales[g] >> 4) * b[ib].bsums[g];
    }
    sum += (h2f(a[ib].d) * b[ib].d) * float(isum) - (h2f(a[ib].dmin) * b[ib].d) * float(msum);
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------------
// Q3_K: 16 groups of 16 with a 6-bit scale (q3_k_scale, biased by 32); x = d * (sc[g] - 32) * q, q in
// -4..3 from two low bits (as Q2_K) and a high bit in hmask (blocks.h). Dot with Q8_K:
// d dx Σ_g (sc[g] - 32) Σ q qx.

void unpack_q3_k(const BlockQ3_K& b, int q[QK_K]) {
  unpack_2bit(b.qs, q);
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) q[128 * h + 32 * j + l] += ((b.hmask[l] >> (4 * h + j)) & 1) * 4 - 4;
    }
  }
}

void dequantize_q3_k(const void* src, float* dst, int64_t n) {
  const BlockQ3_K* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    unpack_q3_k(b[ib], q);
    const float d = h2f(b[ib].d);
    for (int g = 0; g < 16; ++g) {
      const float dg = d * float(q3_k_scale(b[ib].scales, g) - 32);
      for (int i = 0; i < 16; ++i) dst[ib * QK_K + 16 * g + i] = dg * float(q[16 * g + i]);
    }
  }
}

// Per group a signed scale over q in -4..3 (fit_scale_signed); d maps the largest of them to -32 (six
// bits, one more level on the negative side), the quants are chosen again against the stored scales.
void quantize_q3_k(const float* src, void* dst, int64_t n) {
  BlockQ3_K* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const float* x = src + ib * QK_K;
    float sc[16], max_sc = 0;
    for (int g = 0; g < 16; ++g) {
      sc[g] = fit_scale_signed(x + 16 * g, 4);
      if (std::fabs(sc[g]) > std::fabs(max_sc)) max_sc = sc[g];
    }
    std::memset(&b[ib], 0, sizeof(BlockQ3_K));
    b[ib].d = f2h(max_sc / -32);
    const float d = h2f(b[ib].d);
    int q[QK_K];
    for (int g = 0; g < 16; ++g) {
      const int ls = d != 0 ? std::clamp(round_even(sc[g] / d), -32, 31) : 0;
      const int s = ls + 32;
      b[ib].scales[g % 8] |= uint8_t((s & 15) << (g < 8 ? 0 : 4));
      b[ib].scales[8 + g % 4] |= uint8_t((s >> 4) << (2 * (g / 4)));
      const float dg = d * float(ls);
      for (int i = 0; i < 16; ++i) q[16 * g + i] = dg != 0 ? std::clamp(round_even(x[16 * g + i] / dg), -4, 3) : 0;
    }
    int low[QK_K];
    for (int i = 0; i < QK_K; ++i) low[i] = (q[i] + 4) & 3;
    pack_2bit(low, b[ib].qs);
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 32; ++l) {
          if (q[128 * h + 32 * j + l] >= 0) b[ib].hmask[l] |= uint8_t(1 << (4 * h + j));
        }
      }
    }
  }
}

float vec_dot_q3_k(int64_t n, const void* w, const void* x) {
  const BlockQ3_K* a = static_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int q[QK_K];
    unpack_q3_k(a[ib], q);
    int isum = 0;
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int i = 0; i < 16; ++i) s += q[16 * g + i] * b[ib].qs[16 * g + i];
      isum += (q3_k_scale(a[ib].scales, g) - 32) * s;
    }
    sum += (h2f(a[ib].d) * b[ib].d) * float(isum);
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------------
// IQ4_NL / IQ4_XS: 4-bit indices into the non-linear code book kIq4nlValues (blocks.h), one scale per 32
// elements (IQ4_XS: a 6-bit one times the super-block's d).

// The index of the code book value nearest to v (the lower one on ties): the number of midpoints between
// neighbouring values that lie below v (the midpoints are exact in float).
int nearest_iq4nl(float v) {
  static const auto kMid = [] {
    std::array<float, 15> m{};
    for (int k = 0; k < 15; ++k) m[size_t(k)] = 0.5f * float(kIq4nlValues[k] + kIq4nlValues[k + 1]);
    return m;
  }();
  return int(std::lower_bound(kMid.begin(), kMid.end(), v) - kMid.begin());
}

// The scale of 32 elements over the code book: the value of largest magnitude maps to an end of the
// book (-127, the side with the larger magnitude) and nearby scales are tried; for each, the indices are
// the nearest values and the least-squares scale Σ x v / Σ v² is scored by (Σ x v)² / Σ v² (the squared
// error it removes). Returns the best least-squares scale (0 for a zero block).
float fit_scale_iq4(const float* x) {
  const float max = signed_absmax(x, QK);
  if (max == 0) return 0;
  float best_scale = 0, best_fit = -1;
  for (int step = -12; step <= 12; ++step) {
    const float iscale = -(127.0f + 2.0f * float(step)) / max;
    float sxv = 0, sv2 = 0;
    for (int i = 0; i < QK; ++i) {
      const float v = float(kIq4nlValues[nearest_iq4nl(iscale * x[i])]);
      sxv += x[i] * v;
      sv2 += v * v;
    }
    if (sv2 > 0 && sxv * sxv / sv2 > best_fit) {
      best_fit = sxv * sxv / sv2;
      best_scale = sxv / sv2;
    }
  }
  return best_scale;
}

// Indices of 32 elements against the stored scale d, packed as nibbles (element j low, j + 16 high).
void pack_iq4(const float* x, float d, uint8_t qs[QK / 2]) {
  const float id = d != 0 ? 1.0f / d : 0.0f;
  for (int j = 0; j < QK / 2; ++j) {
    const int lo = d != 0 ? nearest_iq4nl(x[j] * id) : 8, hi = d != 0 ? nearest_iq4nl(x[j + QK / 2] * id) : 8;
    qs[j] = uint8_t(lo | (hi << 4));
  }
}

void dequantize_iq4_nl(const void* src, float* dst, int64_t n) {
  const BlockIQ4_NL* b = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float d = h2f(b[ib].d);
    float* y = dst + ib * QK;
    for (int j = 0; j < QK / 2; ++j) {
      y[j] = d * float(kIq4nlValues[b[ib].qs[j] & 15]);
      y[j + QK / 2] = d * float(kIq4nlValues[b[ib].qs[j] >> 4]);
    }
  }
}

void quantize_iq4_nl(const float* src, void* dst, int64_t n) {
  BlockIQ4_NL* b = static_cast<BlockIQ4_NL*>(dst);
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    const float* x = src + ib * QK;
    b[ib].d = f2h(fit_scale_iq4(x));
    pack_iq4(x, h2f(b[ib].d), b[ib].qs);
  }
}

float vec_dot_iq4_nl(int64_t n, const void* w, const void* x) {
  const BlockIQ4_NL* a = static_cast<const BlockIQ4_NL*>(w);
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    int isum = 0;
    for (int j = 0; j < QK / 2; ++j) {
      isum += kIq4nlValues[a[ib].qs[j] & 15] * b[ib].qs[j];
      isum += kIq4nlValues[a[ib].qs[j] >> 4] * b[ib].qs[j + QK / 2];
    }
    sum += float(isum) * (h2f(a[ib].d) * h2f(b[ib].d));
  }
  return sum;
}

void dequantize_iq4_xs(const void* src, float* dst, int64_t n) {
  const BlockIQ4_XS* b = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const float d = h2f(b[ib].d);
    for (int j = 0; j < QK_K / QK; ++j) {
      const float dj = d * float(iq4_xs_scale(b[ib], j) - 32);
      const uint8_t* qs = b[ib].qs + 16 * j;
      float* y = dst + ib * QK_K + QK * j;
      for (int l = 0; l < 16; ++l) {
        y[l] = dj * float(kIq4nlValues[qs[l] & 15]);
        y[l + 16] = dj * float(kIq4nlValues[qs[l] >> 4]);
      }
    }
  }
}

// Per sub-block a scale over the code book (fit_scale_iq4); d maps the largest to -32 (the 6-bit scales
// are biased by 32), and the indices are chosen again against the stored scales.
void quantize_iq4_xs(const float* src, void* dst, int64_t n) {
  BlockIQ4_XS* b = static_cast<BlockIQ4_XS*>(dst);
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    const float* x = src + ib * QK_K;
    float sc[8], max_sc = 0;
    for (int j = 0; j < 8; ++j) {
      sc[j] = fit_scale_iq4(x + QK * j);
      if (std::fabs(sc[j]) > std::fabs(max_sc)) max_sc = sc[j];
    }
    std::memset(&b[ib], 0, sizeof(BlockIQ4_XS));
    b[ib].d = f2h(max_sc / -32);
    const float d = h2f(b[ib].d);
    for (int j = 0; j < 8; ++j) {
      const int ls = d != 0 ? std::clamp(round_even(sc[j] / d), -32, 31) : 0;
      b[ib].scales_l[j / 2] |= uint8_t(((ls + 32) & 15) << (4 * (j % 2)));
      b[ib].scales_h |= uint16_t(((ls + 32) >> 4) << (2 * j));
      pack_iq4(x + QK * j, d * float(ls), b[ib].qs + 16 * j);
    }
  }
}

float vec_dot_iq4_xs(int64_t n, const void* w, const void* x) {
  const BlockIQ4_XS* a = static_cast<const BlockIQ4_XS*>(w);
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(x);
  float sum = 0;
  for (int64_t ib = 0; ib < n / QK_K; ++ib) {
    int isum = 0;
    for (int j = 0; j < QK_K / QK; ++j) {
      const uint8_t* qs = a[ib].qs + 16 * j;
      const int8_t* qx = b[ib].qs + QK * j;
      int s = 0;
      for (int l = 0; l < 16; ++l) s += kIq4nlValues[qs[l] & 15] * qx[l] + kIq4nlValues[qs[l] >> 4] * qx[l + 16];
      isum += (iq4_xs_scale(a[ib], j) - 32) * s;
    }
    sum += (h2f(a[ib].d) * b[ib].d) * float(isum);
  }
  return sum;
}

}  // namespace

// The Q8_0 and Q4_0 quantizers' formulas (above), one block of any length at a time (quant.h).
void quantize_block_q8_0(const float* x, uint8_t* out, int len) {
  float amax = 0;
  for (int i = 0; i < len; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  const uint16_t dh = f32_to_fp16(d);
  std::memcpy(out, &dh, 2);
  for (int i = 0; i < len; ++i) out[2 + i] = uint8_t(int8_t(std::round(x[i] * id)));
}

void quantize_block_q4_0(const float* x, uint8_t* out, int len) {
  const float d = signed_absmax(x, len) / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  const uint16_t dh = f32_to_fp16(d);
  std::memcpy(out, &dh, 2);
  const int half = len / 2;
  for (int j = 0; j < half; ++j) {
    // +8.5 then truncation: round half up into 0..16, clamped to 15
    const int q0 = std::min(15, int(x[j] * id + 8.5f));
    const int q1 = std::min(15, int(x[j + half] * id + 8.5f));
    out[2 + j] = uint8_t(q0 | (q1 << 4));
  }
}

void add_scalar_kernels(KernelTable& t) {
  slot(t, TensorType::F32) = {dequantize_f32, quantize_f32, vec_dot_f32};
  slot(t, TensorType::F16) = {dequantize_f16, quantize_f16, vec_dot_f16};
  slot(t, TensorType::BF16) = {dequantize_bf16, quantize_bf16, vec_dot_bf16};
  slot(t, TensorType::Q8_0) = {dequantize_q8_0, quantize_q8_0, vec_dot_q8_0};
  slot(t, TensorType::Q8_1) = {dequantize_q8_1, quantize_q8_1, nullptr};
  slot(t, TensorType::Q4_0) = {dequantize_q4_0, quantize_q4_0, vec_dot_q4_0};
  slot(t, TensorType::Q4_1) = {dequantize_q4_1, quantize_q4_1, vec_dot_q4_1};
  slot(t, TensorType::Q5_0) = {dequantize_q5_0, quantize_q5_0, vec_dot_q5_0};
  slot(t, TensorType::Q5_1) = {dequantize_q5_1, quantize_q5_1, vec_dot_q5_1};
  slot(t, TensorType::Q8_K) = {dequantize_q8_k, quantize_q8_k, nullptr};
  slot(t, TensorType::Q4_K) = {dequantize_q4_k, quantize_q4_k, vec_dot_q4_k};
  slot(t, TensorType::Q5_K) = {dequantize_q5_k, quantize_q5_k, vec_dot_q5_k};
  slot(t, TensorType::Q6_K) = {dequantize_q6_k, quantize_q6_k, vec_dot_q6_k};
  slot(t, TensorType::Q2_K) = {dequantize_q2_k, quantize_q2_k, vec_dot_q2_k};
  slot(t, TensorType::Q3_K) = {dequantize_q3_k, quantize_q3_k, vec_dot_q3_k};
  slot(t, TensorType::IQ4_NL) = {dequantize_iq4_nl, quantize_iq4_nl, vec_dot_iq4_nl};
  slot(t, TensorType::IQ4_XS) = {dequantize_iq4_xs, quantize_iq4_xs, vec_dot_iq4_xs};
}

}  // namespace folio::quant
