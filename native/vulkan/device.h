// The one Vulkan device the library drives: instance, device selection, the one compute queue, and the
// command buffer that operations are recorded into in order (submitted by synchronize, upload, download).
#ifndef FOLIO_VULKAN_DEVICE_H
#define FOLIO_VULKAN_DEVICE_H

#include <cstdint>
#include <string>

#include "backend/gpu-abi.h"
#include "vk-functions.h"

namespace folio::vulkan {

struct Device {
  void* loader = nullptr;  // the dlopen'ed Vulkan loader
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  bool recording = false;  // cmd has work that is not yet submitted
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memory{};
  std::string driver;  // "Mesa 22.3.6" (VkPhysicalDeviceDriverProperties)
};

// The device, once open_device has succeeded.
Device& device();

// Opens the device: FOLIO_VULKAN_DEVICE (an index into the list vulkaninfo prints, or a substring of the
// name) when set, otherwise the `rank`-th device in the order discrete GPU, integrated GPU, virtual GPU,
// CPU (lavapipe). Returns false with a reason in `err`.
bool open_device(int32_t rank, std::string& err);
void close_device();

// The library's error message (last_error); fail() sets it and returns 1 for the table's functions.
void set_error(const std::string& message);
const char* error();
int fail(const char* what, const std::string& why);
int check(VkResult r, const char* what);  // 0 for VK_SUCCESS, else fail() with the result's name

// The command buffer in recording state (begun on first use after a submit).
VkCommandBuffer commands();
// Orders everything recorded so far before everything recorded next (compute and transfer, all memory).
void barrier();
// Submits the recorded commands and waits for them. Returns 0 or fail().
int submit_and_wait(const char* what);

}  // namespace folio::vulkan

#endif
