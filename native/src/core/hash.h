// A fast 64-bit hash for checksums and fingerprints (not cryptographic): catches damaged files and tells
// model files apart. Streaming: feeding the bytes in pieces gives the same digest as feeding them at once.
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
    total_ += n;
    if (pending_n_) {  // complete the word left over from the last call
      const size_t take = n < 8 - pending_n_ ? n : 8 - pending_n_;
      std::memcpy(pending_ + pending_n_, p, take);
      pending_n_ += take;
      p += take;
      n -= take;
      if (pending_n_ < 8) return;
      mix_word(pending_);
      pending_n_ = 0;
    }
    for (; n >= 8; n -= 8, p += 8) mix_word(p);
    std::memcpy(pending_, p, n);
    pending_n_ = n;
  }
  template <typename T>
  void update_value(const T& v) {
    update(&v, sizeof(T));
  }

  uint64_t digest() const {
    uint64_t h = h_;
    if (pending_n_) {
      uint8_t last[8] = {};
      std::memcpy(last, pending_, pending_n_);
      h = mix(h, load(last));
    }
    uint64_t z = h ^ total_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t load(const uint8_t* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  }
  static uint64_t mix(uint64_t h, uint64_t w) {
    h ^= w * 0x87c37b91114253d5ull;
    return ((h << 31) | (h >> 33)) * 0x4cf5ad432745937full;
  }
  void mix_word(const uint8_t* p) { h_ = mix(h_, load(p)); }

  uint64_t h_;
  uint64_t total_ = 0;
  uint8_t pending_[8] = {};
  size_t pending_n_ = 0;
};

}  // namespace folio
