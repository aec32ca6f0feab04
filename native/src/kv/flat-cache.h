// The flat variable-length KV cache. Per layer, one K and one V buffer hold every KV head's segment back
// to back ([Σ_h cap_h, head_dim] elements), with per head an offset, a length and a capacity, and beside
// every entry the position of the token it came from. Compression keeps a different number of entries
// per head and frees the rest for real; appends write in place into a head's spare capacity, and a layer
// is laid out anew only when a head runs out.
#pragma once
#include <cstdint>
#include <vector>

#include "core/large-buffer.h"
#include "kv/entry-format.h"

namespace folio {

struct HeadSegment {
  int64_t offset = 0;  // index of the head's first entry in the layer's buffers
  int32_t len = 0;     // entries in use
  int32_t cap = 0;     // entries reserved
};

// A new layout of a layer's heads: head h keeps its len and gets room for caps[h] entries, the heads back to
// back in order; *total receives Σ caps. (The CPU and the GPU caches lay their layers out alike.)
std::vector<HeadSegment> lay_out(const std::vector<HeadSegment>& heads, const std::vector<int32_t>& caps,
                                 int64_t* total);

struct LayerKv {
  LargeBuffer k;    // [capacity] keys of head_dim numbers, k_entry_bytes each (kv/entry-format.h)
  LargeBuffer v;    // [capacity] values of head_dim_v numbers, v_entry_bytes each
  LargeBuffer pos;  // [capacity] int32: the source position of each entry
  std::vector<HeadSegment> heads;
  int64_t capacity = 0;  // Σ_h cap_h

  const int32_t* positions(int h) const {
    return reinterpret_cast<const int32_t*>(pos.data()) + heads[size_t(h)].offset;
  }
};

class FlatKvCache {
 public:
  // Free entries a head keeps after compaction or loading, and the least extra room of a re-layout:
  // enough for a question without laying the layer out again.
  static constexpr int32_t kSpare = 32;

  FlatKvCache() = default;
  FlatKvCache(int n_layer, int n_head_kv, int head_dim, int head_dim_v, KvFormat format);
  FlatKvCache(FlatKvCache&&) = default;
  FlatKvCache& operator=(FlatKvCache&&) = default;
  FlatKvCache clone() const;  // a deep copy (fork a chat from a compressed document)

  int n_layer() const { return int(layers_.size()); }
  int n_head_kv() const { return n_head_kv_; }
  int head_dim() const { return head_dim_; }
  int head_dim_v() const { return head_dim_v_; }
  const KvFormat& format() const { return format_; }
  size_t k_entry_bytes() const { return kv::entry_bytes(format_.k, head_dim_); }
  size_t v_entry_bytes() const { return kv::entry_bytes(format_.v, head_dim_v_); }
  const LayerKv& layer(int l) const { return layers_[size_t(l)]; }
  LayerKv& layer(int l) { return layers_[size_t(l)]; }
  int32_t len(int l, int h) const { return layers_[size_t(l)].heads[size_t(h)].len; }

  // Makes sure every head of layer l can take n more entries. When one cannot, the layer is laid out
  // anew with room for n + slack more entries in every head.
  void reserve(int l, int32_t n, int32_t slack);
  // Gives every head h of layer l room for at least caps[h] entries (laying the layer out anew if needed).
  void reserve_heads(int l, const std::vector<int32_t>& caps);
  // Appends n entries already in the cache's format to head h of layer l: pos [n], k [n] and v [n] entries.
  // Room must have been reserved.
  void append_raw(int l, int h, const int32_t* pos, const uint8_t* k, const uint8_t* v, int32_t n);
  // Appends n tokens to every head of layer l, from the projections' layout: k [n, Hk·head_dim],
  // v [n, Hk·head_dim_v] (float), pos [n]. Room must have been reserved.
  void append(int l, const float* k, const float* v, const int32_t* pos, int32_t n);
  // Keeps the listed entries of each head of layer l (ascending indices into the head's entries) and lays
  // the layer out anew with `spare` free entries per head; the old buffers are freed.
  void compact(int l, const std::vector<std::vector<int32_t>>& keep, int32_t spare);
  // Drops every entry whose source position is >= p (truncating a conversation).
  void truncate(int32_t p);
  // Entries [j0, j0 + n) of head h of layer l as the model made them: out [n, head_dim] / [n, head_dim_v].
  void read_k(int l, int h, int32_t j0, int32_t n, float* out) const;
  void read_v(int l, int h, int32_t j0, int32_t n, float* out) const;
  // The same in the stored basis: Hadamard-rotated where format().rotate_k() / rotate_v() (the attention
  // rotates its queries and outputs instead of every entry it reads).
  void read_k_stored(int l, int h, int32_t j0, int32_t n, float* out) const;
  void read_v_stored(int l, int h, int32_t j0, int32_t n, float* out) const;
  // Replaces the keys (floats, encoded in the cache's format) and positions of entries [0, n) of head h
  // of layer l: re-based positions, the keys rotated to them.
  void rewrite_keys(int l, int h, int32_t n, const float* k, const int32_t* pos);

  size_t bytes_used() const;      // Σ len × (K + V entry bytes): the cache's content
  size_t bytes_reserved() const;  // Σ cap × (K + V entry bytes + 4 for the position): what it holds
  bool is_uniform() const;        // every head of every layer holds the same positions (no compression)

 private:
  void relayout(int l, const std::vector<int32_t>& caps);

  std::vector<LayerKv> layers_;
  int n_head_kv_ = 0, head_dim_ = 0, head_dim_v_ = 0;
  KvFormat format_;
};

}  // namespace folio
