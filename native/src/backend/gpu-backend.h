// The GPU backend: the operations of backend/backend.h queued on the C table of the GPU library
// (backend/gpu-abi.h, opened by backend/gpu-loader.h), on device memory, and KV stores that are the
// device cache (backend/gpu-kv-cache.h). A library's table is process-wide, so is its backend: every
// context (chat) on that kind shares it, and memory it allocated may be freed through any of them.
#pragma once
#include <memory>

#include "backend/backend.h"
#include "backend/gpu-loader.h"

namespace folio::backend {

// The backend of GPU library `kind`; throws GPU_UNAVAILABLE (with the loader's reason) where it is unusable.
std::shared_ptr<Backend> gpu_backend(gpu::Kind kind);

}  // namespace folio::backend
