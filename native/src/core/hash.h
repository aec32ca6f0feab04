// A fast 64-bit hash for checksums and fingerprints (not cryptographic): catches damaged files and tells
// model files apart.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace folio {

class Hash64 {
 public:
  explicit Hash64(uint64_t seed = 0) : h_(seed ^ 0x9e3779b97f4a7c15ull) {}
  void update(const void* data, size_t n) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    // Whole 8-byte words, then the tail; the byte count is mixed in at the end.
    for (; n >= 8; n -= 8, p += 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      mix(w);
    }
    if (n) {
      uint64_t w = 0;
      std::memcpy(&w, p, n);
      mix(w ^ (uint64_t(n) << 56));
    }
  }
  template <typename T>
  void update_value(const T& v) { update(&v, sizeof(T)); }
  uint64_t digest() const {
    uint64_t z = h_ ^ total_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  void mix(uint64_t w) {
    h_ ^= w * 0x87c37b91114253d5ull;
    h_ = ((h_ << 31) | (h_ >> 33)) * 0x4cf5ad432745937full;
    total_ += 8;
  }
  uint64_t h_;
  uint64_t total_ = 0;
};

}  // namespace folio
