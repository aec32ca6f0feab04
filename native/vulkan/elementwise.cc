// Element-wise and row-wise operations (shaders/add, add_bias, swiglu, geglu, scale, rms_norm, rope, hadamard
// .comp).
// Each follows its CPU version (backend/cpu-ops.cc) operation for operation; the push-constant structs
// mirror the shaders' `Push` blocks (std430: addresses 8 bytes, then 4-byte fields).
#include <cmath>

#include "device.h"
#include "ops.h"
#include "pipelines.h"

namespace folio::vulkan {

namespace {
constexpr int64_t kMaxIndex = 0x7fffffff;  // the kernels index with 32-bit ints
}

int add(float* x, const float* y, int64_t count) {
  struct {
    uint64_t x, y;
    int32_t count;
  } push{addr(x), addr(y), int32_t(count)};
  if (count > kMaxIndex) return fail("add", "more than 2^31 elements");
  return dispatch_1d(Kernel::Add, &push, sizeof push, count);
}

int add_bias(float* x, const float* b, int64_t n, int64_t width) {
  if (n <= 0 || width <= 0) return 0;
  if (n * width > kMaxIndex) return fail("add_bias", "more than 2^31 elements");
  struct {
    uint64_t x, b;
    int32_t count, width;
  } push{addr(x), addr(b), int32_t(n * width), int32_t(width)};
  return dispatch_1d(Kernel::AddBias, &push, sizeof push, n * width);
}

int swiglu(const float* g, const float* u, float* h, int64_t count) {
  if (count > kMaxIndex) return fail("swiglu", "more than 2^31 elements");
  struct {
    uint64_t g, u, h;
    int32_t count;
  } push{addr(g), addr(u), addr(h), int32_t(count)};
  return dispatch_1d(Kernel::Swiglu, &push, sizeof push, count);
}

int geglu(const float* g, const float* u, float* h, int64_t count) {
  if (count > kMaxIndex) return fail("geglu", "more than 2^31 elements");
  struct {
    uint64_t g, u, h;
    int32_t count;
  } push{addr(g), addr(u), addr(h), int32_t(count)};
  return dispatch_1d(Kernel::Geglu, &push, sizeof push, count);
}

int scale(float* x, float s, int64_t count) {
  if (count > kMaxIndex) return fail("scale", "more than 2^31 elements");
  struct {
    uint64_t x;
    float s;
    int32_t count;
  } push{addr(x), s, int32_t(count)};
  return dispatch_1d(Kernel::Scale, &push, sizeof push, count);
}

int rms_norm(const float* x, const float* g, float* y, int64_t n, int64_t width, float eps) {
  if (n <= 0 || width <= 0) return 0;
  if (n * width > kMaxIndex) return fail("rms_norm", "more than 2^31 elements");
  struct {
    uint64_t x, g, y;
    int32_t n, width;
    float eps;
  } push{addr(x), addr(g), addr(y), int32_t(n), int32_t(width), eps};
  return dispatch_rows(Kernel::RmsNorm, &push, sizeof push, n);
}

int rope(float* x, int64_t n, int32_t n_heads, int32_t head_dim, const int32_t* pos, const folio_gpu_rope* p,
         const float* freq_factors) {
  if (n <= 0 || n_heads <= 0 || head_dim <= 0 || p->rope_dim < 2) return 0;
  if (p->rope_dim > head_dim || p->rope_dim > 256) return fail("rope", "rope_dim larger than supported (256)");
  if (n * n_heads * head_dim > kMaxIndex) return fail("rope", "more than 2^31 elements");
  // The CPU's expression (std::pow of two floats), evaluated on the host so that both start from the same value.
  const float theta_scale = std::pow(p->base, -2.0f / float(p->rope_dim));
  struct {
    uint64_t x, pos, freq_factors;
    int32_t n, n_heads, head_dim, rope_dim, neox;
    float theta_scale, freq_scale, mscale;
  } push{addr(x),     addr(pos), addr(freq_factors), int32_t(n),    n_heads,  head_dim,
         p->rope_dim, p->neox,   theta_scale,        p->freq_scale, p->mscale};
  return dispatch_rows(Kernel::Rope, &push, sizeof push, n);
}

int hadamard(float* x, int64_t rows, int32_t block) {
  if (block < 2 || block > 1024 || (block & (block - 1)))
    return fail("hadamard", "block must be a power of two from 2 to 1024");
  if (rows <= 0) return 0;
  if (rows > (int64_t(1) << 40) / block) return fail("hadamard", "more than 2^40 elements");
  // kv/hadamard.cc's factor, evaluated on the host so that both scale by the same float.
  const float norm = 1.0f / std::sqrt(float(block));
  struct {
    uint64_t x;
    int64_t total;
    int32_t block;
    float norm;
  } push{addr(x), rows * block, block, norm};
  return dispatch_rows(Kernel::Hadamard, &push, sizeof push, (rows * block + 1023) / 1024);  // tiles of 1024
}

}  // namespace folio::vulkan
