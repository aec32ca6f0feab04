// The flat per-head KV cache (kv/flat-cache.h) with its keys and values on the GPU. The same layout and
// the same rules: per layer one K and one V buffer holding every KV head's segment back to back, appends
// write in place into a head's spare capacity, a layer is laid out anew only when a head runs out, and
// compaction frees the rest for real. The bookkeeping (segments, and the source position of every
// entry, which truncation and the statistics need) is kept on the host as well.
//
// Entries are stored in the cache's format (kv/entry-format.h), byte for byte as on the CPU, so a cache
// moves between host and device as it is. Quantized entries are rotated (kv/hadamard.h) on the way in:
// append rotates a copy of the new keys and values on the device (the table's hadamard) before kv_append
// quantizes them; the attention rotates its queries and outputs instead (GpuBackend).
#pragma once
#include <cstdint>
#include <vector>

#include "backend/gpu-buffer.h"
#include "kv/flat-cache.h"

namespace folio::gpu {

class KvCache {
 public:
  KvCache() = default;
  KvCache(const folio_gpu_api& api, int n_layer, int n_head_kv, int head_dim, int head_dim_v, KvFormat format);
  KvCache(KvCache&&) = default;
  KvCache& operator=(KvCache&&) = default;
  KvCache clone() const;

  int n_layer() const { return int(layers_.size()); }
  int n_head_kv() const { return n_head_kv_; }
  const KvFormat& format() const { return format_; }
  int head_dim() const { return head_dim_; }
  int head_dim_v() const { return head_dim_v_; }
  size_t k_entry_bytes() const { return kv::entry_bytes(format_.k, head_dim_); }
  size_t v_entry_bytes() const { return kv::entry_bytes(format_.v, head_dim_v_); }
  int32_t len(int l, int h) const { return layers_[size_t(l)].heads[size_t(h)].len; }
  // The layer as the GPU operations take it.
  folio_gpu_kv_layer layer(int l) const;

  void reserve(int l, int32_t n, int32_t slack);
  // Appends n tokens to every head: k [n, Hk·head_dim], v [n, Hk·head_dim_v] (device, float; left as they
  // are); pos [n] on the device and pos_host the same on the host. Room must have been reserved.
  void append(int l, const float* k, const float* v, const int32_t* pos, const int32_t* pos_host, int32_t n);
  // Keeps the listed entries of each head (ascending) in a new layout with `spare` free entries per head.
  void compact(int l, const std::vector<std::vector<int32_t>>& keep, int32_t spare);
  void truncate(int32_t p);
  // Entries [0, n) of head h as floats (downloaded), as the model made them (rotated back): out [n, head_dim]
  // / [n, head_dim_v].
  void read_k(int l, int h, int32_t n, float* out) const;
  void read_v(int l, int h, int32_t n, float* out) const;
  void read_pos(int l, int h, int32_t n, int32_t* out) const;
  // Replaces the keys and positions of entries [0, n) of head h (host floats and positions, uploaded).
  void rewrite_keys(int l, int h, int32_t n, const float* k, const int32_t* pos);
  size_t bytes_reserved() const;  // Σ capacity × (K + V entry bytes + 4)
  // q [rows, head_dim] (device floats) rotated as the keys are, in the cache's scratch (valid until the
  // cache's next append or rotation): what the attention over rotated keys multiplies them with.
  const float* rotated_queries(const float* q, int64_t rows) const;

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
  void relayout(int l, const std::vector<int32_t>& caps);
  void upload_segments(int l);
  void read(int l, int h, int32_t n, float* out, bool values) const;
  // Device scratch of at least `floats` (contents not kept when it grows).
  float* scratch(size_t floats) const;

  const folio_gpu_api* api_ = nullptr;  // the device's table
  std::vector<Layer> layers_;
  int n_head_kv_ = 0, head_dim_ = 0, head_dim_v_ = 0;
  KvFormat format_;
  // Rotated copies on the device (quantized entries): append's keys [n, Hk·head_dim] and values
  // [n, Hk·head_dim_v], or the attention's queries. The operations run in order on one queue, so one buffer
  // serves them all.
  mutable Buffer scratch_;
};

// x [rows, dim] (device floats) ← each row times the Hadamard transform of kv/hadamard.h, in place, on the
// device: the rotation of quantized entries, of the queries that read them and of the outputs they make.
void rotate_rows(const folio_gpu_api& api, float* x, int64_t rows, int dim);

}  // namespace folio::gpu
