// The Vulkan entry points the library uses, loaded at run time from the loader library (libvulkan.so.1,
// vulkan-1.dll, libvulkan.1.dylib / MoltenVK) rather than linked: a machine without a Vulkan loader then
// gets a reason from folio_gpu_open instead of a library that cannot be loaded at all.
#ifndef FOLIO_VULKAN_FUNCTIONS_H
#define FOLIO_VULKAN_FUNCTIONS_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

// X(name): global functions (no instance needed).
#define FOLIO_VK_GLOBAL(X) \
  X(vkCreateInstance)      \
  X(vkEnumerateInstanceVersion)

// Instance functions.
#define FOLIO_VK_INSTANCE(X)                  \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

// Device functions.
#define FOLIO_VK_DEVICE(X)         \
  X(vkDestroyDevice)               \
  X(vkGetDeviceQueue)              \
  X(vkDeviceWaitIdle)              \
  X(vkCreateBuffer)                \
  X(vkDestroyBuffer)               \
  X(vkGetBufferMemoryRequirements) \
  X(vkAllocateMemory)              \
  X(vkFreeMemory)                  \
  X(vkBindBufferMemory)            \
  X(vkMapMemory)                   \
  X(vkUnmapMemory)                 \
  X(vkGetBufferDeviceAddress)      \
  X(vkCreateCommandPool)           \
  X(vkDestroyCommandPool)          \
  X(vkAllocateCommandBuffers)      \
  X(vkResetCommandBuffer)          \
  X(vkBeginCommandBuffer)          \
  X(vkEndCommandBuffer)            \
  X(vkQueueSubmit)                 \
  X(vkCreateFence)                 \
  X(vkDestroyFence)                \
  X(vkWaitForFences)               \
  X(vkResetFences)                 \
  X(vkCmdCopyBuffer)               \
  X(vkCmdFillBuffer)               \
  X(vkCmdPipelineBarrier)          \
  X(vkCmdBindPipeline)             \
  X(vkCmdPushConstants)            \
  X(vkCmdDispatch)                 \
  X(vkCreateShaderModule)          \
  X(vkDestroyShaderModule)         \
  X(vkCreatePipelineLayout)        \
  X(vkDestroyPipelineLayout)       \
  X(vkCreateComputePipelines)      \
  X(vkDestroyPipeline)

namespace folio::vulkan {

struct Functions {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define FOLIO_VK_MEMBER(name) PFN_##name name = nullptr;
  FOLIO_VK_GLOBAL(FOLIO_VK_MEMBER)
  FOLIO_VK_INSTANCE(FOLIO_VK_MEMBER)
  FOLIO_VK_DEVICE(FOLIO_VK_MEMBER)
#undef FOLIO_VK_MEMBER
};

// The process's one table of entry points (filled by device.cc).
extern Functions vk;

}  // namespace folio::vulkan

#endif
