// Finding and opening the GPU backend library (libfolio-cuda) at run time. The addon never links CUDA:
// where the library, the NVIDIA driver or a device is missing, the engine runs on the CPU and `status`
// says why.
#pragma once
#include <string>

#include "backend/gpu-abi.h"

namespace folio::gpu {

struct Status {
  bool available = false;
  std::string backend = "cpu";  // what the engine uses by default: "cuda" when available, else "cpu"
  std::string library;          // the path tried (empty: none to try)
  std::string reason;           // why the GPU is not used, or which device is
  folio_gpu_device_info device{};
};

// Opens the library once (the first call; thread-safe) and remembers the outcome. Where it looks:
// FOLIO_GPU_LIBRARY (a path) if set, else next to the module holding the engine (folio.node).
// FOLIO_GPU=off turns the GPU off. A table with operations missing (a backend still being written) is
// not used, and the reason names them, unless FOLIO_GPU_PARTIAL=1 (backend-ops, which tests each
// operation that exists).
const Status& status();
// The operation table; nullptr when no GPU is available.
const folio_gpu_api* api();
// The table, or throws GPU_UNAVAILABLE with status().reason.
const folio_gpu_api& require();
// Throws GPU_ERROR with the library's last error (prefixed with `what`) when rc is nonzero.
void check(int rc, const char* what);

}  // namespace folio::gpu
