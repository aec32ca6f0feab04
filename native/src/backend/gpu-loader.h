// Finding and opening the GPU backend libraries (libfolio-cuda, libfolio-vulkan) at run time. The addon
// links neither CUDA nor Vulkan: where a library, its driver or a device is missing, that backend is
// unavailable and its status says why; the CPU runs.
#pragma once
#include <string>

#include "backend/gpu-abi.h"

namespace folio::gpu {

// The GPU libraries the engine knows, in the order `auto` weighs them.
enum class Kind { Cuda, Vulkan };
constexpr Kind kKinds[] = {Kind::Cuda, Kind::Vulkan};
const char* kind_name(Kind k);  // "cuda", "vulkan": the table's `backend` and the sessions' option
bool kind_from_name(const std::string& name, Kind& out);  // kind_name's inverse; false for any other text

struct Status {
  bool available = false;
  std::string backend = "cpu";  // the kind's name when available; for auto's status, "cpu" when no GPU is chosen
  std::string library;          // the path tried (empty: none to try)
  std::string reason;           // why the GPU is not used, or which device is
  folio_gpu_device_info device{};
  const folio_gpu_api* api = nullptr;  // the table, when available
};

// The library of kind `k`, opened once (the first call; thread-safe): FOLIO_GPU_LIBRARY (a path) if set,
// else the kind's file next to the module holding the engine (folio.node). FOLIO_GPU=off turns every GPU
// off; FOLIO_GPU_DEVICE picks a device by index (libfolio-vulkan also reads FOLIO_VULKAN_DEVICE). A table
// with operations missing (a backend still being written) is not used, and the reason names them, unless
// FOLIO_GPU_PARTIAL=1 (backend-ops, which tests each operation that exists).
const Status& status(Kind k);
// What a session with backend `auto` runs on: CUDA where it is usable; else Vulkan on a discrete GPU (on
// macOS any GPU: Apple's, through MoltenVK, is integrated); else the CPU, with `reason` saying why for each
// kind. A library named by FOLIO_GPU_LIBRARY is taken whatever its device (the user asked for it).
const Status& status();

// The table of kind `k`, or throws GPU_UNAVAILABLE with its reason.
const folio_gpu_api& require(Kind k);
// auto's table, or throws GPU_UNAVAILABLE with why none (the tools that test "the" GPU: backend-ops).
const folio_gpu_api& require();
// Throws GPU_ERROR with the library's last error (prefixed with `what`) when rc is nonzero.
void check(const folio_gpu_api& api, int rc, const char* what);

}  // namespace folio::gpu
