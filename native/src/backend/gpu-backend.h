// The GPU backend: the operations of backend/backend.h queued on the C table of the GPU library
// (backend/gpu-abi.h, opened by backend/gpu-loader.h), on device memory, and KV stores that are the
// device cache (backend/gpu-kv-cache.h). The table is process-wide, so is this backend: every context
// (chat) shares it, and memory it allocated may be freed through any of them.
#pragma once
#include <memory>

#include "backend/backend.h"

namespace folio::backend {

// The GPU backend; throws GPU_UNAVAILABLE (with the loader's reason) where there is none.
std::shared_ptr<Backend> gpu_backend();

}  // namespace folio::backend
