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
  // The pages a buffer asks the OS for. Huge: 2 MiB pages where it can (Linux transparent huge pages),
  // for large buffers filled once and streamed through often, such as the weights' copies, whose 4 KiB
  // pages cost the matrix-vector products 2-20% (docs/benchmarks-log.md, "Huge pages for every matrix").
  // Small: 4 KiB pages, also where the OS gives huge ones unasked (to measure the difference). Default:
  // whatever the OS gives.
  enum class Pages { Default, Huge, Small };

  LargeBuffer() = default;
  // Zero-filled; throws std::bad_alloc. The pages are a hint: the buffer works the same without them.
  explicit LargeBuffer(size_t bytes, Pages pages = Pages::Default);
  // Whether asking for huge pages can get them here: Linux, with transparent huge pages not turned off,
  // and FOLIO_HUGE_PAGES=0 not in the environment (which makes Huge mean Small).
  static bool huge_pages_available();
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
