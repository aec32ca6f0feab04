// Device memory: every allocation is one device-local buffer whose device address is the pointer the
// table hands out (so that the engine's pointer arithmetic works unchanged); copies to and from the host
// go through one host-visible staging buffer.
#ifndef FOLIO_VULKAN_MEMORY_H
#define FOLIO_VULKAN_MEMORY_H

#include <cstddef>
#include <cstdint>

#include "vk-functions.h"

namespace folio::vulkan {

// A device pointer's buffer and its byte offset in it; `buffer` is VK_NULL_HANDLE when p lies in no
// allocation or [p, p + bytes) runs past the end of its allocation.
struct Located {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
};
Located locate(const void* p, size_t bytes);

// The largest allocation the device makes (what alloc refuses above): its maxMemoryAllocationSize, its
// maxBufferSize, or FOLIO_VULKAN_MAX_ALLOC (bytes) where that is lower (for tests), less the alignment pad.
uint64_t max_allocation();
int alloc(size_t bytes, void** out);
int free_memory(void* p);
int upload(void* dst, const void* src_host, size_t bytes);
int download(void* dst_host, const void* src, size_t bytes);
int copy(void* dst, const void* src, size_t bytes);
int zero(void* dst, size_t bytes);
int synchronize();
// Frees every allocation and the staging buffer (close).
void release_all();
// Bytes allocated now (device_info's free estimate).
uint64_t bytes_allocated();

}  // namespace folio::vulkan

#endif
