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
  explicit LargeBuffer(size_t bytes);  // zero-filled; throws std::bad_alloc
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
