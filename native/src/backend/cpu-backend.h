// The CPU backend: the operations of backend/backend.h on host memory, with the engine's kernels
// (backend/cpu-ops.h: blocked quantized matrix products, flash-style attention) over a thread pool, and
// KV stores that are the flat cache itself (kv/flat-cache.h).
#pragma once
#include <memory>

#include "backend/backend.h"
#include "backend/cpu-ops.h"
#include "core/thread-pool.h"

namespace folio::backend {

// reference_attention: the slow, obviously correct attention and window scores (tests) instead of the fast ones.
std::unique_ptr<Backend> make_cpu_backend(ThreadPool& pool, bool reference_attention = false);

}  // namespace folio::backend
