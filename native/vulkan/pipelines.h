// Compute pipelines from the SPIR-V that the build compiled (shaders/*.comp) and embedded, created on
// first use; every kernel takes its arguments (buffer addresses and sizes) as push constants only.
#ifndef FOLIO_VULKAN_PIPELINES_H
#define FOLIO_VULKAN_PIPELINES_H

#include <cstddef>
#include <cstdint>

namespace folio::vulkan {

enum class Kernel {
  Add,
  AddBias,
  Swiglu,
  Geglu,
  Scale,
  RmsNorm,
  Rope,
  GetRows,
  Matvec,
  Matmul,
  KvAppend,
  KvLengths,
  KvGather,
  Attention,
  AttentionMerge,
  WsStats,
  WsAttn,
  WsPool,
  Hadamard,
  Count
};

// Records a dispatch of `kernel` over groups (x, y, z), its push constants `push` (≤ 128 bytes, the
// size every device allows), then a barrier. Returns 0 or fail().
int dispatch(Kernel kernel, const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz);
// A 1-D kernel of 256 invocations a group over `count` items, the groups laid out in (x ≤ 65535, y).
int dispatch_1d(Kernel kernel, const void* push, uint32_t push_bytes, int64_t count);
// One group per row of `rows`, laid out likewise.
int dispatch_rows(Kernel kernel, const void* push, uint32_t push_bytes, int64_t rows);

void release_pipelines();

}  // namespace folio::vulkan

#endif
