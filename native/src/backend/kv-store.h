// The KV cache as the forward pass and the compressor see it, wherever its entries live: the CPU's flat
// cache (kv/flat-cache.h) or its twin on a GPU (backend/gpu-kv-cache.h). Both have the same layout and
// rules (per layer, every KV head's segment back to back; appends in place into a head's spare room;
// compaction frees the rest). A store belongs to the backend that made it (Backend::make_kv_store) and
// is read by that backend's operations.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kv/flat-cache.h"

namespace folio::backend {

class KvStore {
 public:
  virtual ~KvStore() = default;

  virtual int n_layer() const = 0;
  virtual int n_head_kv() const = 0;
  virtual KvFormat format() const = 0;
  virtual size_t k_entry_bytes() const = 0;
  virtual size_t v_entry_bytes() const = 0;
  virtual int32_t len(int l, int h) const = 0;

  // Makes sure every head of layer l can take n more entries (a re-layout leaves n + slack free).
  virtual void reserve(int l, int32_t n, int32_t slack) = 0;
  // Appends n tokens to every head of layer l, in place: k [n, Hk·head_dim], v [n, Hk·head_dim_v] and
  // pos [n] in the backend's memory, pos_host [n] the same positions on the host. Room must be reserved.
  virtual void append(int l, const float* k, const float* v, const int32_t* pos, const int32_t* pos_host,
                      int32_t n) = 0;
  // Keeps the listed entries of each head of layer l (ascending), `spare` free entries per head after them.
  virtual void compact(int l, const std::vector<std::vector<int32_t>>& keep, int32_t spare) = 0;
  // Drops every entry whose source position is >= p.
  virtual void truncate(int32_t p) = 0;
  // Entries [0, n) of head h of layer l as floats on the host: out [n, head_dim] / [n, head_dim_v].
  virtual void read_k(int l, int h, int32_t n, float* out) const = 0;
  virtual void read_v(int l, int h, int32_t n, float* out) const = 0;
  // The source positions of entries [0, n) of head h of layer l: out [n] on the host.
  virtual void read_pos(int l, int h, int32_t n, int32_t* out) const = 0;
  // Replaces the keys and positions of entries [0, n) of head h of layer l (re-based positions): k [n,
  // head_dim] floats and pos [n], both on the host.
  virtual void rewrite_keys(int l, int h, int32_t n, const float* k, const int32_t* pos) = 0;
  // The bytes the store holds: every head's reserved room, keys, values and positions.
  virtual size_t bytes_reserved() const = 0;

  virtual std::unique_ptr<KvStore> clone() const = 0;
  // A host copy (saving a session, statistics); host() is the cache itself where the store is one.
  virtual FlatKvCache to_host() const = 0;
  virtual const FlatKvCache* host() const { return nullptr; }
  // The cache on the host to change and give back (kv_store_from_host): moved out of a store that is one
  // (the CPU's, which is left empty), else a copy. What a change that is not a forward pass starts from.
  virtual FlatKvCache release_host() { return to_host(); }
};

}  // namespace folio::backend
