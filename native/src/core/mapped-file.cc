#include "core/mapped-file.h"

#include <cerrno>
#include <cstring>

#include "core/error.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace folio {

#ifdef _WIN32
MappedFile::MappedFile(const std::string& path) : path_(path) {
  int wlen = MultiByteToWideChar(CP_UTF8, 0, path.c_str(), -1, nullptr, 0);
  std::wstring wpath(size_t(wlen > 0 ? wlen : 1), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, path.c_str(), -1, wpath.data(), wlen);
  HANDLE f =
      CreateFileW(wpath.c_str(), GENERIC_READ, FILE_SHARE_READ, nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (f == INVALID_HANDLE_VALUE)
    fail("FILE_OPEN", strfmt("cannot open %s (Windows error %lu)", path.c_str(), GetLastError()));
  LARGE_INTEGER sz;
  if (!GetFileSizeEx(f, &sz)) {
    CloseHandle(f);
    fail("FILE_OPEN", "cannot read the size of " + path);
  }
  size_ = size_t(sz.QuadPart);
  file_ = f;
  if (size_ == 0) return;
  HANDLE m = CreateFileMappingW(f, nullptr, PAGE_READONLY, 0, 0, nullptr);
  if (!m) {
    CloseHandle(f);
    fail("FILE_MAP", "cannot map " + path);
  }
  mapping_ = m;
  data_ = static_cast<const uint8_t*>(MapViewOfFile(m, FILE_MAP_READ, 0, 0, 0));
  if (!data_) {
    CloseHandle(m);
    CloseHandle(f);
    fail("FILE_MAP", "cannot map " + path);
  }
}
MappedFile::~MappedFile() {
  if (data_) UnmapViewOfFile(data_);
  if (mapping_) CloseHandle(mapping_);
  if (file_) CloseHandle(file_);
}
#else
MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("FILE_OPEN", strfmt("cannot open %s: %s", path.c_str(), std::strerror(errno)));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    fail("FILE_OPEN", strfmt("cannot stat %s: %s", path.c_str(), std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("FILE_OPEN", path + " is not a regular file");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      fail("FILE_MAP", strfmt("cannot map %s: %s", path.c_str(), std::strerror(errno)));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
}
MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}
#endif

void MappedFile::release(const uint8_t* p, size_t n) const {
#ifdef _WIN32
  SYSTEM_INFO si;
  GetSystemInfo(&si);
  const uintptr_t page = uintptr_t(si.dwPageSize);
#else
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
#endif
  const uintptr_t lo = (uintptr_t(p) + page - 1) / page * page, hi = (uintptr_t(p) + n) / page * page;
  if (p < data_ || p + n > data_ + size_ || hi <= lo) return;
    // Hints: a failure changes nothing.
#ifdef _WIN32
  // Unlocking pages that are not locked takes them out of the working set (VirtualUnlock's documented
  // side effect).
  VirtualUnlock(reinterpret_cast<void*>(lo), SIZE_T(hi - lo));
#else
  ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
#endif
}

}  // namespace folio
