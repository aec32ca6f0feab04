#include "memory.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "device.h"

namespace folio::vulkan {

namespace {

struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;  // of the pointer handed out within the buffer (its address rounded up to 256)
  size_t bytes = 0;         // asked for
};
std::map<uintptr_t, Allocation> g_allocations;  // by the pointer handed out
uint64_t g_allocated = 0;

struct Staging {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  void* mapped = nullptr;
  size_t bytes = 0;
} g_staging;
constexpr size_t kAlignPad = 256;                   // an allocation's address is rounded up to 256
constexpr size_t kStagingBytes = size_t(16) << 20;  // copies larger than this go in pieces

// A memory type that `type_bits` allows, with the `want` flags, preferring also `prefer`.
int memory_type(uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) {
  const VkPhysicalDeviceMemoryProperties& m = device().memory;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < m.memoryTypeCount; i++) {
      const VkMemoryPropertyFlags f = m.memoryTypes[i].propertyFlags;
      if (!(type_bits & (1u << i)) || (f & want) != want) continue;
      if (pass == 0 && (f & prefer) != prefer) continue;
      return int(i);
    }
  return -1;
}

// A buffer of `bytes` bound to its own memory; `host` for the staging buffer (mapped, coherent).
int make_buffer(size_t bytes, bool host, VkBuffer& buffer, VkDeviceMemory& memory, const char* what) {
  Device& d = device();
  VkBufferCreateInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = bytes;
  bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
             (host ? 0 : VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT);
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (int e = check(vk.vkCreateBuffer(d.device, &bi, nullptr, &buffer), what)) return e;
  VkMemoryRequirements req{};
  vk.vkGetBufferMemoryRequirements(d.device, buffer, &req);
  const int type = host ? memory_type(req.memoryTypeBits,
                                      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0)
                        : memory_type(req.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type < 0) {
    vk.vkDestroyBuffer(d.device, buffer, nullptr);
    buffer = VK_NULL_HANDLE;
    return fail(what, "no suitable Vulkan memory type");
  }
  VkMemoryAllocateFlagsInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO;
  fi.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.pNext = host ? nullptr : &fi;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = uint32_t(type);
  VkResult r = vk.vkAllocateMemory(d.device, &ai, nullptr, &memory);
  if (r == VK_SUCCESS) r = vk.vkBindBufferMemory(d.device, buffer, memory, 0);
  if (r != VK_SUCCESS) {
    if (memory) vk.vkFreeMemory(d.device, memory, nullptr);
    vk.vkDestroyBuffer(d.device, buffer, nullptr);
    buffer = VK_NULL_HANDLE, memory = VK_NULL_HANDLE;
    return fail(what, std::to_string(bytes) + " bytes: " +
                          (r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "out of device memory"
                           : r == VK_ERROR_OUT_OF_HOST_MEMORY ? "out of host memory"
                                                              : "allocation failed"));
  }
  return 0;
}

int ensure_staging() {
  if (g_staging.buffer) return 0;
  if (int e = make_buffer(kStagingBytes, true, g_staging.buffer, g_staging.memory, "staging buffer")) return e;
  g_staging.bytes = kStagingBytes;
  return check(vk.vkMapMemory(device().device, g_staging.memory, 0, VK_WHOLE_SIZE, 0, &g_staging.mapped),
               "staging buffer");
}

}  // namespace

Located locate(const void* p, size_t bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = g_allocations.upper_bound(a);
  if (it == g_allocations.begin()) return {};
  --it;
  const uintptr_t off = a - it->first;
  if (off > it->second.bytes || bytes > it->second.bytes - off) return {};
  return {it->second.buffer, it->second.offset + off};
}

uint64_t max_allocation() {
  static const uint64_t limit = [] {
    const Device& d = device();
    VkPhysicalDeviceMaintenance3Properties m3{};
    m3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
    VkPhysicalDeviceMaintenance4Properties m4{};
    m4.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES;
    VkPhysicalDeviceProperties2 p2{};
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &m3;
    // maxBufferSize is core from Vulkan 1.3; an older device states only the allocation limit
    if (d.props.apiVersion >= VK_API_VERSION_1_3) m3.pNext = &m4;
    vk.vkGetPhysicalDeviceProperties2(d.physical, &p2);
    uint64_t most = m3.maxMemoryAllocationSize;
    if (m4.maxBufferSize && m4.maxBufferSize < most) most = m4.maxBufferSize;
    // A lower limit for tests: the engine's splitting of large weights runs on lavapipe's ample one too.
    if (const char* env = std::getenv("FOLIO_VULKAN_MAX_ALLOC")) {
      const unsigned long long want = std::strtoull(env, nullptr, 10);
      if (want > 0 && want < most) most = want;
    }
    return most > kAlignPad ? most - kAlignPad : 0;
  }();
  return limit;
}

int alloc(size_t bytes, void** out) {
  *out = nullptr;
  Device& d = device();
  if (bytes > max_allocation())
    return fail("alloc", std::to_string(bytes) + " bytes is more than this Vulkan device allocates at once (" +
                             std::to_string(max_allocation()) + ")");
  const size_t padded = (bytes ? bytes : 1) + kAlignPad;  // room to round the address up to 256
  Allocation a;
  if (int e = make_buffer(padded, false, a.buffer, a.memory, "alloc")) return e;
  VkBufferDeviceAddressInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO;
  ai.buffer = a.buffer;
  const VkDeviceAddress base = vk.vkGetBufferDeviceAddress(d.device, &ai);
  const VkDeviceAddress aligned = (base + 255) & ~VkDeviceAddress(255);
  a.offset = aligned - base;
  a.bytes = bytes;
  g_allocations[uintptr_t(aligned)] = a;
  g_allocated += padded;
  *out = reinterpret_cast<void*>(uintptr_t(aligned));
  return 0;
}

int free_memory(void* p) {
  if (!p) return 0;
  auto it = g_allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == g_allocations.end()) return fail("free", "not a pointer that alloc returned");
  // Queued work may still use the buffer (cudaFree waits likewise).
  if (int e = submit_and_wait("free")) return e;
  vk.vkDestroyBuffer(device().device, it->second.buffer, nullptr);
  vk.vkFreeMemory(device().device, it->second.memory, nullptr);
  g_allocated -= it->second.bytes + 256;
  g_allocations.erase(it);
  return 0;
}

int upload(void* dst, const void* src_host, size_t bytes) {
  if (!bytes) return 0;
  const Located to = locate(dst, bytes);
  if (!to.buffer) return fail("upload", "the destination is not inside one device allocation");
  if (int e = ensure_staging()) return e;
  for (size_t done = 0; done < bytes;) {
    const size_t part = std::min(bytes - done, g_staging.bytes);
    std::memcpy(g_staging.mapped, static_cast<const uint8_t*>(src_host) + done, part);
    const VkBufferCopy c{0, to.offset + done, part};
    vk.vkCmdCopyBuffer(commands(), g_staging.buffer, to.buffer, 1, &c);
    barrier();
    if (int e = submit_and_wait("upload")) return e;
    done += part;
  }
  return 0;
}

int download(void* dst_host, const void* src, size_t bytes) {
  if (!bytes) return submit_and_wait("download");
  const Located from = locate(src, bytes);
  if (!from.buffer) return fail("download", "the source is not inside one device allocation");
  if (int e = ensure_staging()) return e;
  for (size_t done = 0; done < bytes;) {
    const size_t part = std::min(bytes - done, g_staging.bytes);
    const VkBufferCopy c{from.offset + done, 0, part};
    vk.vkCmdCopyBuffer(commands(), from.buffer, g_staging.buffer, 1, &c);
    if (int e = submit_and_wait("download")) return e;
    std::memcpy(static_cast<uint8_t*>(dst_host) + done, g_staging.mapped, part);
    done += part;
  }
  return 0;
}

int copy(void* dst, const void* src, size_t bytes) {
  if (!bytes) return 0;
  const Located to = locate(dst, bytes), from = locate(src, bytes);
  if (!to.buffer || !from.buffer) return fail("copy", "a pointer is not inside one device allocation");
  if (to.buffer == from.buffer && to.offset < from.offset + bytes && from.offset < to.offset + bytes)
    return fail("copy", "the source and destination overlap");
  const VkBufferCopy c{from.offset, to.offset, bytes};
  vk.vkCmdCopyBuffer(commands(), from.buffer, to.buffer, 1, &c);
  barrier();
  return 0;
}

int zero(void* dst, size_t bytes) {
  if (!bytes) return 0;
  const Located to = locate(dst, bytes);
  if (!to.buffer) return fail("zero", "the destination is not inside one device allocation");
  if (to.offset % 4 == 0 && bytes % 4 == 0) {  // vkCmdFillBuffer's rule
    vk.vkCmdFillBuffer(commands(), to.buffer, to.offset, bytes, 0);
    barrier();
    return 0;
  }
  const std::vector<uint8_t> zeros(bytes, 0);  // rare: a range not in whole words
  return upload(dst, zeros.data(), bytes);
}

int synchronize() { return submit_and_wait("synchronize"); }

void release_all() {
  Device& d = device();
  if (!d.device) return;
  vk.vkDeviceWaitIdle(d.device);
  for (auto& [p, a] : g_allocations) {
    vk.vkDestroyBuffer(d.device, a.buffer, nullptr);
    vk.vkFreeMemory(d.device, a.memory, nullptr);
  }
  g_allocations.clear();
  g_allocated = 0;
  if (g_staging.buffer) {
    vk.vkDestroyBuffer(d.device, g_staging.buffer, nullptr);
    vk.vkFreeMemory(d.device, g_staging.memory, nullptr);
  }
  g_staging = Staging{};
}

uint64_t bytes_allocated() { return g_allocated; }

}  // namespace folio::vulkan
