// A device allocation of a GPU backend (the table it came from), freed when it goes out of scope (move-only).
#pragma once
#include <cstddef>
#include <utility>

#include "backend/gpu-loader.h"

namespace folio::gpu {

class Buffer {
 public:
  Buffer() = default;
  Buffer(const folio_gpu_api& api, size_t bytes) : api_(&api), bytes_(bytes) {
    check(api, api.alloc(bytes, &p_), "GPU allocation");
  }
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept : api_(o.api_), p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      api_ = o.api_;
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void reset() {
    if (p_) api_->free(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  // Grows to at least `bytes` on `api`'s device (contents not kept).
  void ensure(const folio_gpu_api& api, size_t bytes) {
    if (bytes_ < bytes || api_ != &api) *this = Buffer(api, bytes);
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return p_ != nullptr; }

  // Nothing to move is a no-op, also on an empty buffer (a cache layer without entries).
  void upload(const void* src, size_t bytes, size_t offset = 0) {
    if (bytes == 0) return;
    check(*api_, api_->upload(static_cast<char*>(p_) + offset, src, bytes), "GPU upload");
  }
  void download(void* dst, size_t bytes, size_t offset = 0) const {
    if (bytes == 0) return;
    check(*api_, api_->download(dst, static_cast<const char*>(p_) + offset, bytes), "GPU download");
  }

 private:
  const folio_gpu_api* api_ = nullptr;
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace folio::gpu
