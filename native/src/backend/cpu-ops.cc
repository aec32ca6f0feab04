#include "backend/cpu-ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/vector-math.h"

namespace folio::cpu {

void Scratch::reserve(int threads, size_t n) {
  if (per_thread.size() < size_t(threads)) per_thread.resize(size_t(threads));
  for (auto& b : per_thread)
    if (b.size() < n) b.resize(n);
}

namespace {

// One row. The sum of squares is in double, as ggml's, over 8 partial sums (one running sum is a chain of
// dependent additions the compiler may not vectorise); in double the order changes nothing a float sees.
FOLIO_VECTOR_CLONES
void rms_norm_row(const float* xr, const float* g, float* yr, int64_t width, float eps) {
  constexpr int kLanes = 8;
  double part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= width; i += kLanes)
    for (int l = 0; l < kLanes; l++) part[l] += double(xr[i + l]) * double(xr[i + l]);
  for (; i < width; i++) part[0] += double(xr[i]) * double(xr[i]);
  double sum = 0;
  for (double p : part) sum += p;
  const float scale = 1.0f / std::sqrt(float(sum / double(width)) + eps);
  for (i = 0; i < width; i++) yr[i] = xr[i] * scale * g[i];
}

}  // namespace

void rms_norm(ThreadPool& pool, const float* x, const float* g, float* y, int64_t n, int64_t width, float eps) {
  pool.parallel_for(n, [&](int64_t t, int) { rms_norm_row(x + t * width, g, y + t * width, width, eps); });
}

void add_bias(float* x, const float* bb, int64_t n, int64_t width) {
  for (int64_t t = 0; t < n; t++)
    for (int64_t i = 0; i < width; i++) x[t * width + i] += bb[i];
}

void rope(ThreadPool& pool, float* x, int64_t n, int n_heads, int head_dim, const int32_t* pos,
          const backend::RopeParams& p, const float* freq_factors) {
  const int rd = p.rope_dim;
  const float theta_scale = std::pow(p.base, -2.0f / float(rd));
  const bool neox = p.neox;
  pool.parallel_for(n, [&](int64_t t, int) {
    // The angle of pair i is pos · base^(−2i/rope_dim) (÷ the pair's frequency factor, × the linear scale);
    // the powers are built by repeated multiplication in float, as ggml does, so angles agree bit for bit.
    float cs[2 * 512];
    float theta = float(pos[t]);
    for (int i = 0; i < rd / 2; i++) {
      const float ff = freq_factors ? freq_factors[i] : 1.0f;
      const float th = p.freq_scale * (theta / ff);
      cs[2 * i] = std::cos(th) * p.mscale;
      cs[2 * i + 1] = std::sin(th) * p.mscale;
      theta *= theta_scale;
    }
    for (int h = 0; h < n_heads; h++) {
      float* v = x + t * int64_t(n_heads) * head_dim + int64_t(h) * head_dim;
      for (int i = 0; i < rd / 2; i++) {
        const int a = neox ? i : 2 * i, b = neox ? i + rd / 2 : 2 * i + 1;
        const float c = cs[2 * i], sn = cs[2 * i + 1];
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * c - x1 * sn;
        v[b] = x0 * sn + x1 * c;
      }
    }
  });
}

namespace {

// h = silu(g) · u over one row, in blocks: with e = exp(−|g|) ≤ 1 (the vectorised exp for x ≤ 0),
// silu(g) = g / (1 + e) for g ≥ 0 and g · e / (1 + e) below, neither of which overflows. h may alias g.
FOLIO_VECTOR_CLONES
void swiglu_row(const float* g, const float* u, float* h, int64_t width) {
  constexpr int kBlock = 256;
  float e[kBlock];
  for (int64_t i0 = 0; i0 < width; i0 += kBlock) {
    const int nb = int(std::min<int64_t>(kBlock, width - i0));
    for (int i = 0; i < nb; i++) e[i] = -std::fabs(g[i0 + i]);
    exp_below_zero(e, nb);
    for (int i = 0; i < nb; i++) {
      const float gi = g[i0 + i];
      h[i0 + i] = (gi >= 0.0f ? gi : gi * e[i]) / (1.0f + e[i]) * u[i0 + i];
    }
  }
}

}  // namespace

void swiglu(ThreadPool& pool, const float* g, const float* u, float* h, int64_t n, int64_t width) {
  pool.parallel_for(n, [&](int64_t t, int) { swiglu_row(g + t * width, u + t * width, h + t * width, width); });
}

// The constants are the formula's (Hendrycks & Gimpel 2016): √(2/π) and 0.044715.
float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f, kCoef = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
}

void geglu(ThreadPool& pool, const float* g, const float* u, float* h, int64_t n, int64_t width) {
  pool.parallel_for(n, [&](int64_t t, int) {
    for (int64_t i = t * width, e = i + width; i < e; i++) h[i] = gelu_tanh(g[i]) * u[i];
  });
}

void scale(float* x, float s, int64_t count) {
  for (int64_t i = 0; i < count; i++) x[i] *= s;
}

}  // namespace folio::cpu
