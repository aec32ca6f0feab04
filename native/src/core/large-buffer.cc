#include "core/large-buffer.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <sys/mman.h>
#endif

namespace folio {

LargeBuffer::LargeBuffer(size_t bytes, Pages pages) : size_(bytes) {
  if (bytes == 0) return;
#ifdef _WIN32
  (void)pages;
  data_ = static_cast<uint8_t*>(VirtualAlloc(nullptr, bytes, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE));
  if (!data_) throw std::bad_alloc();
#else
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<uint8_t*>(p);
#ifdef MADV_HUGEPAGE
  if (pages == Pages::Huge && huge_pages_available()) madvise(p, bytes, MADV_HUGEPAGE);
  else if (pages != Pages::Default) madvise(p, bytes, MADV_NOHUGEPAGE);
#endif
#endif
}

bool LargeBuffer::huge_pages_available() {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // "always [madvise] never": the bracketed word is the mode in force.
  static const bool available = [] {
    const char* env = std::getenv("FOLIO_HUGE_PAGES");  // 0: 4 KiB pages only, to measure the difference
    if (env && std::strcmp(env, "0") == 0) return false;
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    return std::getline(f, modes) && modes.find("[never]") == std::string::npos;
  }();
  return available;
#else
  return false;
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
