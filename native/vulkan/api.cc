// libfolio-vulkan's one export: folio_gpu_open fills the table of backend/gpu-abi.h with the Vulkan
// implementations.
#include <cstdio>
#include <cstring>
#include <string>

#include "device.h"
#include "memory.h"
#include "ops.h"
#include "pipelines.h"

#if defined(_WIN32)
#define FOLIO_EXPORT __declspec(dllexport)
#else
#define FOLIO_EXPORT __attribute__((visibility("default")))
#endif

namespace folio::vulkan {

namespace {

const char* last_error() { return error(); }

int device_info(folio_gpu_device_info* out) {
  std::memset(out, 0, sizeof *out);
  const Device& d = device();
  std::snprintf(out->name, sizeof out->name, "%s", d.props.deviceName);
  std::snprintf(out->runtime, sizeof out->runtime, "Vulkan %u.%u, driver %s", VK_API_VERSION_MAJOR(d.props.apiVersion),
                VK_API_VERSION_MINOR(d.props.apiVersion), d.driver.c_str());
  out->compute_major = int32_t(VK_API_VERSION_MAJOR(d.props.apiVersion));
  out->compute_minor = int32_t(VK_API_VERSION_MINOR(d.props.apiVersion));
  out->multiprocessors = 0;  // Vulkan does not say
  switch (d.props.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: out->device_type = FOLIO_GPU_DEVICE_DISCRETE; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: out->device_type = FOLIO_GPU_DEVICE_INTEGRATED; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: out->device_type = FOLIO_GPU_DEVICE_VIRTUAL; break;
    default: out->device_type = FOLIO_GPU_DEVICE_CPU; break;  // CPU (lavapipe) or OTHER
  }
  out->max_alloc_bytes = max_allocation();
  // The device-local heaps' size; free is that less what this library holds (other processes unseen).
  uint64_t total = 0;
  for (uint32_t i = 0; i < d.memory.memoryHeapCount; i++)
    if (d.memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) total += d.memory.memoryHeaps[i].size;
  out->total_bytes = total;
  out->free_bytes = total > bytes_allocated() ? total - bytes_allocated() : 0;
  return 0;
}

void close_library() {
  release_attention_scratch();
  release_scoring_scratch();
  release_pipelines();
  release_all();
  close_device();
}

}  // namespace

}  // namespace folio::vulkan

extern "C" FOLIO_EXPORT int folio_gpu_open(uint32_t abi_version, int32_t device, folio_gpu_api* api, char* err,
                                           size_t err_len) {
  using namespace folio::vulkan;
  if (abi_version != FOLIO_GPU_ABI_VERSION) {
    std::snprintf(err, err_len, "the Vulkan backend speaks GPU ABI %d, the engine %u", FOLIO_GPU_ABI_VERSION,
                  abi_version);
    return 1;
  }
  std::string why;
  if (!open_device(device, why)) {
    std::snprintf(err, err_len, "%s", why.c_str());
    return 1;
  }
  std::memset(api, 0, sizeof *api);
  api->abi_version = FOLIO_GPU_ABI_VERSION;
  api->backend = "vulkan";
  api->last_error = last_error;
  api->device_info = device_info;
  api->close = close_library;
  api->alloc = alloc;
  api->free = free_memory;
  api->upload = upload;
  api->download = download;
  api->copy = copy;
  api->zero = zero;
  api->synchronize = synchronize;
  api->matmul = matmul;
  api->get_rows = get_rows;
  api->rms_norm = rms_norm;
  api->rope = rope;
  api->swiglu = swiglu;
  api->geglu = geglu;
  api->scale = scale;
  api->add = add;
  api->add_bias = add_bias;
  api->kv_append = kv_append;
  api->attention = attention;
  api->kv_gather = kv_gather;
  api->window_scores = window_scores;
  api->hadamard = hadamard;
  return 0;
}
