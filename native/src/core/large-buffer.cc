#include "core/large-buffer.h"

#include <new>

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <sys/mman.h>
#endif

namespace folio {

LargeBuffer::LargeBuffer(size_t bytes, bool huge_pages) : size_(bytes) {
  if (bytes == 0) return;
#ifdef _WIN32
  (void)huge_pages;
  data_ = static_cast<uint8_t*>(VirtualAlloc(nullptr, bytes, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE));
  if (!data_) throw std::bad_alloc();
#else
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<uint8_t*>(p);
#ifdef MADV_HUGEPAGE
  if (huge_pages) madvise(p, bytes, MADV_HUGEPAGE);  // a hint: without it the buffer works the same
#endif
#endif
}

LargeBuffer::~LargeBuffer() {
  if (!data_) return;
#ifdef _WIN32
  VirtualFree(data_, 0, MEM_RELEASE);
#else
  munmap(data_, size_);
#endif
}

}  // namespace folio
