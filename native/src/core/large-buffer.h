// A page-aligned block of memory taken straight from the OS (mmap / VirtualAlloc), so that freeing it
// gives the pages back at once. KV caches shrink after compression and the process's resident memory
// has to show it; malloc may keep freed blocks in its arenas.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

namespace folio {

class LargeBuffer {
 public:
  LargeBuffer() = default;
  // Zero-filled; throws std::bad_alloc. huge_pages asks the OS for 2 MiB pages where it can (Linux
  // transparent huge pages): for large buffers filled once and streamed through often, such as
  // repacked weights, whose 4 KiB pages cost decoding 2-3% in TLB misses (docs/benchmarks.md).
  explicit LargeBuffer(size_t bytes, bool huge_pages = false);
  ~LargeBuffer();
  LargeBuffer(LargeBuffer&& o) noexcept { swap(o); }
  LargeBuffer& operator=(LargeBuffer&& o) noexcept {
    LargeBuffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  LargeBuffer(const LargeBuffer&) = delete;
  LargeBuffer& operator=(const LargeBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  void swap(LargeBuffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
  }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace folio
