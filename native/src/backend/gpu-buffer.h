// A device allocation of the GPU backend, freed when it goes out of scope (move-only).
#pragma once
#include <cstddef>
#include <utility>

#include "backend/gpu-loader.h"

namespace folio::gpu {

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes) : bytes_(bytes) { check(require().alloc(bytes, &p_), "GPU allocation"); }
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void reset() {
    if (p_) api()->free(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  // Grows to at least `bytes` (contents not kept).
  void ensure(size_t bytes) {
    if (bytes_ < bytes) *this = Buffer(bytes);
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return p_ != nullptr; }

  void upload(const void* src, size_t bytes, size_t offset = 0) {
    check(require().upload(static_cast<char*>(p_) + offset, src, bytes), "GPU upload");
  }
  void download(void* dst, size_t bytes, size_t offset = 0) const {
    check(require().download(dst, static_cast<const char*>(p_) + offset, bytes), "GPU download");
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace folio::gpu
