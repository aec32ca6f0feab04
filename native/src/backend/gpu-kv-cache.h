// The flat per-head KV cache (kv/flat-cache.h) with its keys and values on the GPU. The same layout and
// the same rules: per layer one K and one V buffer holding every KV head's segment back to back, appends
// write in place into a head's spare capacity, a layer is laid out anew only when a head runs out, and
// compaction frees the rest for real. The bookkeeping (segments, and the source position of every
// entry, which truncation and the statistics need) is kept on the host as well.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/gpu-buffer.h"
#include "kv/flat-cache.h"

namespace folio::gpu {

class KvCache {
 public:
  KvCache() = default;
  // The GPU backends hold f16 or f32 entries, keys and values alike; another format fails NOT_SUPPORTED.
  KvCache(const folio_gpu_api& api, int n_layer, int n_head_kv, int head_dim, int head_dim_v, KvFormat format);
  KvCache(KvCache&&) = default;
  KvCache& operator=(KvCache&&) = default;
  KvCache clone() const;

  int n_layer() const { return int(layers_.size()); }
  int n_head_kv() const { return n_head_kv_; }
  KvType type() const { return type_; }
  KvFormat format() const { return type_; }
  size_t k_entry_bytes() const { return size_t(head_dim_) * elem_size(); }
  size_t v_entry_bytes() const { return size_t(head_dim_v_) * elem_size(); }
  int32_t len(int l, int h) const { return layers_[size_t(l)].heads[size_t(h)].len; }
  // The layer as the GPU operations take it.
  folio_gpu_kv_layer layer(int l) const;

  void reserve(int l, int32_t n, int32_t slack);
  // Appends n tokens to every head: k [n, Hk·head_dim], v [n, Hk·head_dim_v] (device, float);
  // pos [n] on the device and pos_host the same on the host. Room must have been reserved.
  void append(int l, const float* k, const float* v, const int32_t* pos, const int32_t* pos_host, int32_t n);
  // Keeps the listed entries of each head (ascending) in a new layout with `spare` free entries per head.
  void compact(int l, const std::vector<std::vector<int32_t>>& keep, int32_t spare);
  void truncate(int32_t p);
  // Entries [0, n) of head h as floats (downloaded): out [n, head_dim] / [n, head_dim_v].
  void read_k(int l, int h, int32_t n, float* out) const;
  void read_v(int l, int h, int32_t n, float* out) const;
  void read_pos(int l, int h, int32_t n, int32_t* out) const;
  // Replaces the keys and positions of entries [0, n) of head h (host floats and positions, uploaded).
  void rewrite_keys(int l, int h, int32_t n, const float* k, const int32_t* pos);
  size_t bytes_reserved() const;  // Σ capacity × (K + V entry bytes + 4)

  // To and from the host cache (saving and loading sessions, statistics).
  FlatKvCache to_host() const;
  static KvCache from_host(const folio_gpu_api& api, const FlatKvCache& c);

 private:
  struct Layer {
    Buffer k, v, pos;    // [capacity, head_dim], [capacity, head_dim_v] of the element type; [capacity] int32
    Buffer offset, len;  // [Hk] int64, [Hk] int32: the segments, as the GPU operations read them
    std::vector<HeadSegment> heads;
    std::vector<int32_t> pos_host;  // [capacity]
    int64_t capacity = 0;
  };
  size_t elem_size() const { return type_ == KvType::F16 ? 2 : 4; }
  void relayout(int l, const std::vector<int32_t>& caps);
  void upload_segments(int l);
  void read(int l, int h, int32_t n, float* out, bool values) const;

  const folio_gpu_api* api_ = nullptr;  // the device's table
  std::vector<Layer> layers_;
  int n_head_kv_ = 0, head_dim_ = 0, head_dim_v_ = 0;
  KvType type_ = KvType::F16;
};

}  // namespace folio::gpu
