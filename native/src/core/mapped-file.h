// A read-only memory map of a whole file. Weights are used in place (except the matrices the CPU kernels
// repack at load: model/weights.h), so loading costs no copy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace folio {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws Error FILE_OPEN / FILE_MAP
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops the whole pages inside [p, p + n) from this process's resident memory (its working set on
  // Windows): they stay in the OS's file cache and come back on the next access. For data that has been
  // copied elsewhere (weights repacked at load).
  void release(const uint8_t* p, size_t n) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
#ifdef _WIN32
  void* file_ = nullptr;
  void* mapping_ = nullptr;
#endif
};

}  // namespace folio
