#include "device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

namespace folio::vulkan {

Functions vk;

namespace {

Device g_device;
std::string g_error;

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan driver)";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "a Vulkan error";
  }
}

#if defined(__APPLE__)
// The folder of this library (libfolio-vulkan), where a packaged app keeps its MoltenVK.
std::string own_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&own_folder), &info) || !info.dli_fname) return "";
  const std::string p(info.dli_fname);
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : p.substr(0, slash);
}
#endif

void* open_loader(std::string& err) {
#if defined(_WIN32)
  void* h = reinterpret_cast<void*>(LoadLibraryA("vulkan-1.dll"));
  if (!h) err = "no Vulkan loader (vulkan-1.dll is not installed)";
  return h;
#else
#if defined(__APPLE__)
  // The system's loader (the Vulkan SDK, Homebrew's vulkan-loader), else MoltenVK itself: it exports
  // vkGetInstanceProcAddr and runs without a loader, from the system or from beside this library.
  const std::vector<std::string> names = {"libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib",
                                          own_folder() + "/libMoltenVK.dylib"};
#else
  const std::vector<std::string> names = {"libvulkan.so.1", "libvulkan.so"};
#endif
  for (const std::string& n : names)
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  err = "no Vulkan loader (" + names[0] + " is not installed: " + dlerror() + ")";
  return nullptr;
#endif
}

void* loader_symbol(void* lib, const char* name) {
#if defined(_WIN32)
  return reinterpret_cast<void*>(GetProcAddress(reinterpret_cast<HMODULE>(lib), name));
#else
  return dlsym(lib, name);
#endif
}

// Discrete GPUs first, then integrated, virtual, other, CPU (lavapipe): a software device is the last resort.
int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
    default: return 3;
  }
}

constexpr uint32_t kMaxGroupInvocations = 256;         // local_size_x of the widest kernels
constexpr uint32_t kMaxSharedBytes = 2 * 32 * 33 * 4;  // matmul.comp's ws and xs tiles

// What the kernels need: Vulkan 1.2 with buffer device addresses (the table's pointers are device
// addresses), 64-bit integers (their arithmetic), 8- and 16-bit storage (quantized blocks, F16 values).
bool suitable(VkPhysicalDevice pd, std::string& why) {
  VkPhysicalDeviceProperties p{};
  vk.vkGetPhysicalDeviceProperties(pd, &p);
  if (VK_API_VERSION_MAJOR(p.apiVersion) == 1 && VK_API_VERSION_MINOR(p.apiVersion) < 2) {
    why = "it supports Vulkan 1." + std::to_string(VK_API_VERSION_MINOR(p.apiVersion)) + ", 1.2 is needed";
    return false;
  }
  VkPhysicalDeviceVulkan12Features f12{};
  f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceVulkan11Features f11{};
  f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 f{};
  f.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f.pNext = &f11;
  vk.vkGetPhysicalDeviceFeatures2(pd, &f);
  const char* missing = !f12.bufferDeviceAddress        ? "bufferDeviceAddress"
                        : !f.features.shaderInt64       ? "shaderInt64"
                        : !f12.storageBuffer8BitAccess  ? "storageBuffer8BitAccess"
                        : !f11.storageBuffer16BitAccess ? "storageBuffer16BitAccess"
                        : !f12.shaderInt8               ? "shaderInt8"
                                                        : nullptr;
  if (missing) {
    why = std::string("it lacks the feature ") + missing;
    return false;
  }
  // The kernels' fixed shapes (shaders/*.comp): work groups of up to 256 invocations and up to 8.3 KiB of
  // shared memory (matmul's two 32 x 33 tiles). Vulkan guarantees only 128 invocations and 16 KiB; no
  // subgroup operations are used, so the subgroup size does not matter.
  const VkPhysicalDeviceLimits& lim = p.limits;
  if (lim.maxComputeWorkGroupInvocations < kMaxGroupInvocations ||
      lim.maxComputeWorkGroupSize[0] < kMaxGroupInvocations) {
    why = "its compute work groups hold " + std::to_string(lim.maxComputeWorkGroupInvocations) + " invocations, " +
          std::to_string(kMaxGroupInvocations) + " are needed";
    return false;
  }
  if (lim.maxComputeSharedMemorySize < kMaxSharedBytes) {
    why = "its work groups share " + std::to_string(lim.maxComputeSharedMemorySize) + " bytes, " +
          std::to_string(kMaxSharedBytes) + " are needed";
    return false;
  }
  return true;
}

bool create_instance(std::string& err) {
  std::string e;
  g_device.loader = open_loader(e);
  if (!g_device.loader) {
    err = e;
    return false;
  }
  vk.vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(loader_symbol(g_device.loader, "vkGetInstanceProcAddr"));
  if (!vk.vkGetInstanceProcAddr) {
    err = "the Vulkan loader has no vkGetInstanceProcAddr";
    return false;
  }
#define FOLIO_VK_LOAD(name) vk.name = reinterpret_cast<PFN_##name>(vk.vkGetInstanceProcAddr(nullptr, #name));
  FOLIO_VK_GLOBAL(FOLIO_VK_LOAD)
#undef FOLIO_VK_LOAD
  uint32_t version = VK_API_VERSION_1_0;
  if (vk.vkEnumerateInstanceVersion) vk.vkEnumerateInstanceVersion(&version);
  if (VK_API_VERSION_MINOR(version) < 2 && VK_API_VERSION_MAJOR(version) == 1) {
    err = "the Vulkan loader supports Vulkan 1." + std::to_string(VK_API_VERSION_MINOR(version)) + ", 1.2 is needed";
    return false;
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "Folio";
  app.pEngineName = "folio-vulkan";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
#if defined(__APPLE__)
  // MoltenVK is a portability implementation: the loader lists it only when the application asks.
  const char* ext[] = {"VK_KHR_portability_enumeration"};
  ci.flags = 0x00000001;  // VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR
  ci.enabledExtensionCount = 1;
  ci.ppEnabledExtensionNames = ext;
#endif
  VkResult r = vk.vkCreateInstance(&ci, nullptr, &g_device.instance);
#if defined(__APPLE__)
  if (r == VK_ERROR_EXTENSION_NOT_PRESENT) {  // MoltenVK opened without a loader: nothing to enumerate
    ci.flags = 0;
    ci.enabledExtensionCount = 0;
    r = vk.vkCreateInstance(&ci, nullptr, &g_device.instance);
  }
#endif
  if (r != VK_SUCCESS) {
    err = std::string("no Vulkan instance: ") + result_name(r);
    return false;
  }
#define FOLIO_VK_LOAD(name) vk.name = reinterpret_cast<PFN_##name>(vk.vkGetInstanceProcAddr(g_device.instance, #name));
  FOLIO_VK_INSTANCE(FOLIO_VK_LOAD)
#undef FOLIO_VK_LOAD
  return true;
}

bool pick_device(int32_t rank, std::string& err) {
  uint32_t count = 0;
  vk.vkEnumeratePhysicalDevices(g_device.instance, &count, nullptr);
  std::vector<VkPhysicalDevice> all(count);
  if (count) vk.vkEnumeratePhysicalDevices(g_device.instance, &count, all.data());
  if (all.empty()) {
    err = "no Vulkan device (the loader found no driver with a device)";
    return false;
  }
  auto name_of = [](VkPhysicalDevice pd) {
    VkPhysicalDeviceProperties p{};
    vk.vkGetPhysicalDeviceProperties(pd, &p);
    return std::string(p.deviceName);
  };
  std::string why;
  const char* want = std::getenv("FOLIO_VULKAN_DEVICE");
  if (want && *want) {
    char* end = nullptr;
    const long idx = std::strtol(want, &end, 10);
    VkPhysicalDevice chosen = VK_NULL_HANDLE;
    if (end && *end == '\0') {
      if (idx < 0 || size_t(idx) >= all.size()) {
        err = "FOLIO_VULKAN_DEVICE=" + std::string(want) + ": there are " + std::to_string(all.size()) +
              " Vulkan devices (0.." + std::to_string(all.size() - 1) + ")";
        return false;
      }
      chosen = all[size_t(idx)];
    } else {
      for (VkPhysicalDevice pd : all)
        if (name_of(pd).find(want) != std::string::npos) {
          chosen = pd;
          break;
        }
      if (!chosen) {
        std::string names;
        for (VkPhysicalDevice pd : all) names += (names.empty() ? "" : ", ") + name_of(pd);
        err = "FOLIO_VULKAN_DEVICE=" + std::string(want) + " names none of the Vulkan devices (" + names + ")";
        return false;
      }
    }
    if (!suitable(chosen, why)) {
      err = "the Vulkan device " + name_of(chosen) + " cannot run Folio: " + why;
      return false;
    }
    g_device.physical = chosen;
    return true;
  }
  std::vector<VkPhysicalDevice> usable;
  std::string reasons;
  for (VkPhysicalDevice pd : all) {
    if (suitable(pd, why)) usable.push_back(pd);
    else reasons += (reasons.empty() ? "" : "; ") + name_of(pd) + ": " + why;
  }
  std::stable_sort(usable.begin(), usable.end(), [](VkPhysicalDevice a, VkPhysicalDevice b) {
    VkPhysicalDeviceProperties pa{}, pb{};
    vk.vkGetPhysicalDeviceProperties(a, &pa);
    vk.vkGetPhysicalDeviceProperties(b, &pb);
    return type_rank(pa.deviceType) < type_rank(pb.deviceType);
  });
  if (usable.empty()) {
    err = "no Vulkan device can run Folio (" + reasons + ")";
    return false;
  }
  if (rank < 0 || size_t(rank) >= usable.size()) {
    err = "device " + std::to_string(rank) + " asked for, " + std::to_string(usable.size()) + " usable Vulkan devices";
    return false;
  }
  g_device.physical = usable[size_t(rank)];
  return true;
}

bool create_device(std::string& err) {
  Device& d = g_device;
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  VkPhysicalDeviceProperties2 p2{};
  p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  p2.pNext = &driver;
  vk.vkGetPhysicalDeviceProperties2(d.physical, &p2);
  d.props = p2.properties;
  d.driver = std::string(driver.driverName) + (driver.driverInfo[0] ? std::string(" ") + driver.driverInfo : "");
  vk.vkGetPhysicalDeviceMemoryProperties(d.physical, &d.memory);

  uint32_t nq = 0;
  vk.vkGetPhysicalDeviceQueueFamilyProperties(d.physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> fams(nq);
  vk.vkGetPhysicalDeviceQueueFamilyProperties(d.physical, &nq, fams.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; i++)
    if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) d.queue_family = i, found = true;
  if (!found) {
    err = std::string("the Vulkan device ") + d.props.deviceName + " has no compute queue";
    return false;
  }
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{};
  qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qi.queueFamilyIndex = d.queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;

  VkPhysicalDeviceVulkan12Features f12{};
  f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  f12.bufferDeviceAddress = VK_TRUE;
  f12.storageBuffer8BitAccess = VK_TRUE;
  f12.shaderInt8 = VK_TRUE;
  VkPhysicalDeviceVulkan11Features f11{};
  f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  f11.storageBuffer16BitAccess = VK_TRUE;
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 f{};
  f.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f.features.shaderInt64 = VK_TRUE;
  f.pNext = &f11;
  VkDeviceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  ci.pNext = &f;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
#if defined(__APPLE__)
  const char* ext[] = {"VK_KHR_portability_subset"};
  ci.enabledExtensionCount = 1;
  ci.ppEnabledExtensionNames = ext;
#endif
  if (VkResult r = vk.vkCreateDevice(d.physical, &ci, nullptr, &d.device); r != VK_SUCCESS) {
    err = std::string("cannot open the Vulkan device ") + d.props.deviceName + ": " + result_name(r);
    return false;
  }
#define FOLIO_VK_LOAD(name) vk.name = reinterpret_cast<PFN_##name>(vk.vkGetDeviceProcAddr(d.device, #name));
  FOLIO_VK_DEVICE(FOLIO_VK_LOAD)
#undef FOLIO_VK_LOAD
  vk.vkGetDeviceQueue(d.device, d.queue_family, 0, &d.queue);

  VkCommandPoolCreateInfo pi{};
  pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = d.queue_family;
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  VkResult r = vk.vkCreateCommandPool(d.device, &pi, nullptr, &d.pool);
  if (r == VK_SUCCESS) ai.commandPool = d.pool, r = vk.vkAllocateCommandBuffers(d.device, &ai, &d.cmd);
  if (r == VK_SUCCESS) r = vk.vkCreateFence(d.device, &fi, nullptr, &d.fence);
  if (r != VK_SUCCESS) {
    err = std::string("cannot set up the Vulkan queue: ") + result_name(r);
    return false;
  }
  return true;
}

}  // namespace

Device& device() { return g_device; }

bool open_device(int32_t rank, std::string& err) {
  if (g_device.device) return true;
  if (create_instance(err) && pick_device(rank, err) && create_device(err)) return true;
  close_device();
  return false;
}

void close_device() {
  Device& d = g_device;
  if (d.device) {
    vk.vkDeviceWaitIdle(d.device);
    if (d.fence) vk.vkDestroyFence(d.device, d.fence, nullptr);
    if (d.pool) vk.vkDestroyCommandPool(d.device, d.pool, nullptr);
    vk.vkDestroyDevice(d.device, nullptr);
  }
  if (d.instance) vk.vkDestroyInstance(d.instance, nullptr);
  // The loader stays loaded: unloading a driver while the process runs gains nothing and risks its atexit hooks.
  void* loader = d.loader;
  d = Device{};
  d.loader = loader;
}

void set_error(const std::string& message) { g_error = message; }
const char* error() { return g_error.c_str(); }

int fail(const char* what, const std::string& why) {
  g_error = std::string(what) + ": " + why;
  return 1;
}

int check(VkResult r, const char* what) { return r == VK_SUCCESS ? 0 : fail(what, result_name(r)); }

VkCommandBuffer commands() {
  Device& d = g_device;
  if (!d.recording) {
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vk.vkResetCommandBuffer(d.cmd, 0);
    vk.vkBeginCommandBuffer(d.cmd, &bi);
    d.recording = true;
  }
  return d.cmd;
}

void barrier() {
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vk.vkCmdPipelineBarrier(commands(), stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

int submit_and_wait(const char* what) {
  Device& d = g_device;
  if (!d.recording) return 0;
  d.recording = false;
  if (int e = check(vk.vkEndCommandBuffer(d.cmd), what)) return e;
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &d.cmd;
  if (int e = check(vk.vkQueueSubmit(d.queue, 1, &si, d.fence), what)) return e;
  const VkResult r = vk.vkWaitForFences(d.device, 1, &d.fence, VK_TRUE, UINT64_MAX);
  vk.vkResetFences(d.device, 1, &d.fence);
  return check(r, what);
}

}  // namespace folio::vulkan
