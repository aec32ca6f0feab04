// The matrix products and the embedding lookup over the GGUF weight types (shaders/dequant.glsl): a
// matrix-vector kernel for up to 8 tokens (decode), a tiled one for more (prefill); get_rows dequantizes
// whole rows.
#include <string>

#include "device.h"
#include "ops.h"
#include "pipelines.h"

namespace folio::vulkan {

namespace {

// The types dequant.glsl reads (the ggml type ids), and their block sizes in elements.
int block_elems(int32_t type) {
  switch (type) {
    case 0:
    case 1:
    case 30: return 1;  // F32, F16, BF16
    case 2:
    case 3:
    case 6:
    case 7:
    case 8:
    case 20: return 32;  // Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL
    case 10:
    case 11:
    case 12:
    case 13:
    case 14:
    case 23: return 256;  // Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS
    default: return 0;
  }
}

int check_weight(const char* what, int32_t type, int64_t cols) {
  const int be = block_elems(type);
  if (!be) return fail(what, "weight type " + std::to_string(type) + " is not supported by the Vulkan backend");
  if (cols % be) return fail(what, std::to_string(cols) + " columns is not a whole number of blocks");
  return 0;
}

constexpr int64_t kMaxIndex = 0x7fffffff;  // the kernels index activations with 32-bit ints
constexpr int64_t kMatvecTokens = 8;       // up to this many tokens: the matrix-vector kernel

}  // namespace

int matmul(const void* w, int32_t type, int64_t rows, int64_t cols, size_t ldw, const float* x, int64_t n, float* y) {
  if (rows <= 0 || n <= 0) return 0;
  if (int e = check_weight("matmul", type, cols)) return e;
  if (n * cols > kMaxIndex || n * rows > kMaxIndex) return fail("matmul", "more than 2^31 activations");
  struct {
    uint64_t w, x, y;
    int64_t ldw;
    int32_t rows, cols, n, type;
  } push{addr(w), addr(x), addr(y), int64_t(ldw), int32_t(rows), int32_t(cols), int32_t(n), type};
  if (n <= kMatvecTokens) {
    // x: rows (≤ 65535 a layer), z: the rest; y: tiles of 8 tokens.
    const uint32_t gx = uint32_t(rows < 65535 ? rows : 65535), gz = uint32_t((rows + 65534) / 65535);
    return dispatch(Kernel::Matvec, &push, sizeof push, gx, uint32_t((n + 7) / 8), gz);
  }
  const int64_t gx = (rows + 31) / 32, gy = (n + 31) / 32;
  if (gx > 65535 || gy > 65535) return fail("matmul", "too many rows or tokens for one dispatch");
  return dispatch(Kernel::Matmul, &push, sizeof push, uint32_t(gx), uint32_t(gy), 1);
}

int get_rows(const void* w, int32_t type, int64_t cols, size_t ldw, const int32_t* ids, int64_t n, float* out) {
  if (n <= 0 || cols <= 0) return 0;
  if (int e = check_weight("get_rows", type, cols)) return e;
  if (n * cols > kMaxIndex) return fail("get_rows", "more than 2^31 values");
  struct {
    uint64_t w, ids, out;
    int64_t ldw;
    int32_t n, cols, type;
  } push{addr(w), addr(ids), addr(out), int64_t(ldw), int32_t(n), int32_t(cols), type};
  return dispatch_1d(Kernel::GetRows, &push, sizeof push, n * ((cols + 7) / 8));
}

}  // namespace folio::vulkan
