#include "kv/flat-cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace folio {

FlatKvCache::FlatKvCache(int n_layer, int n_head_kv, int head_dim, int head_dim_v, KvFormat format)
    : layers_(size_t(n_layer)), n_head_kv_(n_head_kv), head_dim_(head_dim), head_dim_v_(head_dim_v), format_(format) {
  kv::check_format(format, head_dim, head_dim_v);
  for (auto& L : layers_) L.heads.resize(size_t(n_head_kv));
}

FlatKvCache FlatKvCache::clone() const {
  FlatKvCache c(n_layer(), n_head_kv_, head_dim_, head_dim_v_, format_);
  for (size_t l = 0; l < layers_.size(); l++) {
    const LayerKv& src = layers_[l];
    LayerKv& dst = c.layers_[l];
    dst.heads = src.heads;
    dst.capacity = src.capacity;
    dst.k = LargeBuffer(src.k.size());
    dst.v = LargeBuffer(src.v.size());
    dst.pos = LargeBuffer(src.pos.size());
    // Copy only what is in use; spare capacity stays zero (fresh pages cost no memory until written).
    for (const HeadSegment& s : src.heads) {
      std::memcpy(dst.k.data() + size_t(s.offset) * k_entry_bytes(), src.k.data() + size_t(s.offset) * k_entry_bytes(),
                  size_t(s.len) * k_entry_bytes());
      std::memcpy(dst.v.data() + size_t(s.offset) * v_entry_bytes(), src.v.data() + size_t(s.offset) * v_entry_bytes(),
                  size_t(s.len) * v_entry_bytes());
      std::memcpy(dst.pos.data() + size_t(s.offset) * 4, src.pos.data() + size_t(s.offset) * 4, size_t(s.len) * 4);
    }
  }
  return c;
}

std::vector<HeadSegment> lay_out(const std::vector<HeadSegment>& heads, const std::vector<int32_t>& caps,
                                 int64_t* total) {
  std::vector<HeadSegment> out(heads.size());
  int64_t off = 0;
  for (size_t h = 0; h < heads.size(); h++) {
    out[h].offset = off;
    out[h].len = heads[h].len;
    out[h].cap = caps[h];
    off += caps[h];
  }
  *total = off;
  return out;
}

void FlatKvCache::relayout(int l, const std::vector<int32_t>& caps) {
  LayerKv& L = layers_[size_t(l)];
  LayerKv next;
  next.heads = lay_out(L.heads, caps, &next.capacity);
  next.k = LargeBuffer(size_t(next.capacity) * k_entry_bytes());
  next.v = LargeBuffer(size_t(next.capacity) * v_entry_bytes());
  next.pos = LargeBuffer(size_t(next.capacity) * 4);
  for (size_t h = 0; h < L.heads.size(); h++) {
    const HeadSegment &s = L.heads[h], &d = next.heads[h];
    if (s.len == 0) continue;
    std::memcpy(next.k.data() + size_t(d.offset) * k_entry_bytes(), L.k.data() + size_t(s.offset) * k_entry_bytes(),
                size_t(s.len) * k_entry_bytes());
    std::memcpy(next.v.data() + size_t(d.offset) * v_entry_bytes(), L.v.data() + size_t(s.offset) * v_entry_bytes(),
                size_t(s.len) * v_entry_bytes());
    std::memcpy(next.pos.data() + size_t(d.offset) * 4, L.pos.data() + size_t(s.offset) * 4, size_t(s.len) * 4);
  }
  L = std::move(next);  // the old buffers go back to the OS here
}

void FlatKvCache::reserve(int l, int32_t n, int32_t slack) {
  LayerKv& L = layers_[size_t(l)];
  bool fits = true;
  for (const HeadSegment& s : L.heads) fits = fits && s.len + n <= s.cap;
  if (fits) return;
  std::vector<int32_t> caps(L.heads.size());
  for (size_t h = 0; h < caps.size(); h++) caps[h] = std::max(L.heads[h].cap, L.heads[h].len + n + std::max(slack, 0));
  relayout(l, caps);
}

void FlatKvCache::reserve_heads(int l, const std::vector<int32_t>& caps) {
  LayerKv& L = layers_[size_t(l)];
  std::vector<int32_t> c(L.heads.size());
  bool fits = true;
  for (size_t h = 0; h < c.size(); h++) {
    c[h] = std::max(L.heads[h].cap, caps[h]);
    fits = fits && c[h] == L.heads[h].cap;
  }
  if (!fits) relayout(l, c);
}

void FlatKvCache::append_raw(int l, int h, const int32_t* pos, const uint8_t* k, const uint8_t* v, int32_t n) {
  LayerKv& L = layers_[size_t(l)];
  HeadSegment& s = L.heads[size_t(h)];
  if (s.len + n > s.cap) fail("INTERNAL", "KV cache append without reserved room");
  const int64_t e = s.offset + s.len;
  std::memcpy(L.k.data() + size_t(e) * k_entry_bytes(), k, size_t(n) * k_entry_bytes());
  std::memcpy(L.v.data() + size_t(e) * v_entry_bytes(), v, size_t(n) * v_entry_bytes());
  std::memcpy(L.pos.data() + size_t(e) * 4, pos, size_t(n) * 4);
  s.len += n;
}

void FlatKvCache::append(int l, const float* k, const float* v, const int32_t* pos, int32_t n) {
  LayerKv& L = layers_[size_t(l)];
  for (int h = 0; h < n_head_kv_; h++) {
    HeadSegment& s = L.heads[size_t(h)];
    if (s.len + n > s.cap) fail("INTERNAL", "KV cache append without reserved room");
    for (int32_t t = 0; t < n; t++) {
      const int64_t e = s.offset + s.len + t;
      const float* kr = k + (int64_t(t) * n_head_kv_ + h) * head_dim_;
      const float* vr = v + (int64_t(t) * n_head_kv_ + h) * head_dim_v_;
      kv::encode(format_.k, format_.rotate_k(), kr, L.k.data() + size_t(e) * k_entry_bytes(), head_dim_, 1);
      kv::encode(format_.v, format_.rotate_v(), vr, L.v.data() + size_t(e) * v_entry_bytes(), head_dim_v_, 1);
      reinterpret_cast<int32_t*>(L.pos.data())[e] = pos[t];
    }
    s.len += n;
  }
}

void FlatKvCache::compact(int l, const std::vector<std::vector<int32_t>>& keep, int32_t spare) {
  LayerKv& L = layers_[size_t(l)];
  // Move the kept entries to the front of each head's segment (in place: indices ascend), then lay the
  // layer out anew at its new size.
  std::vector<int32_t> caps(L.heads.size());
  for (size_t h = 0; h < L.heads.size(); h++) {
    HeadSegment& s = L.heads[h];
    const std::vector<int32_t>& idx = keep[h];
    int32_t prev = -1;
    for (size_t i = 0; i < idx.size(); i++) {
      const int32_t j = idx[i];
      if (j <= prev || j >= s.len) fail("INTERNAL", "compaction indices must ascend within the head");
      prev = j;
      if (int64_t(i) == j) continue;
      const int64_t from = s.offset + j, to = s.offset + int64_t(i);
      std::memmove(L.k.data() + size_t(to) * k_entry_bytes(), L.k.data() + size_t(from) * k_entry_bytes(),
                   k_entry_bytes());
      std::memmove(L.v.data() + size_t(to) * v_entry_bytes(), L.v.data() + size_t(from) * v_entry_bytes(),
                   v_entry_bytes());
      reinterpret_cast<int32_t*>(L.pos.data())[to] = reinterpret_cast<int32_t*>(L.pos.data())[from];
    }
    s.len = int32_t(idx.size());
    caps[h] = s.len + std::max(spare, 0);
  }
  relayout(l, caps);
}

void FlatKvCache::truncate(int32_t p) {
  for (LayerKv& L : layers_)
    for (HeadSegment& s : L.heads) {
      const int32_t* pos = reinterpret_cast<const int32_t*>(L.pos.data()) + s.offset;
      while (s.len > 0 && pos[s.len - 1] >= p) s.len--;
    }
}

void FlatKvCache::read_k(int l, int h, int32_t j0, int32_t n, float* out) const {
  const LayerKv& L = layers_[size_t(l)];
  kv::decode(format_.k, format_.rotate_k(), L.k.data() + size_t(L.heads[size_t(h)].offset + j0) * k_entry_bytes(), out,
             head_dim_, n);
}

void FlatKvCache::read_v(int l, int h, int32_t j0, int32_t n, float* out) const {
  const LayerKv& L = layers_[size_t(l)];
  kv::decode(format_.v, format_.rotate_v(), L.v.data() + size_t(L.heads[size_t(h)].offset + j0) * v_entry_bytes(), out,
             head_dim_v_, n);
}

void FlatKvCache::read_k_stored(int l, int h, int32_t j0, int32_t n, float* out) const {
  const LayerKv& L = layers_[size_t(l)];
  kv::decode_stored(format_.k, L.k.data() + size_t(L.heads[size_t(h)].offset + j0) * k_entry_bytes(), out, head_dim_,
                    n);
}

void FlatKvCache::read_v_stored(int l, int h, int32_t j0, int32_t n, float* out) const {
  const LayerKv& L = layers_[size_t(l)];
  kv::decode_stored(format_.v, L.v.data() + size_t(L.heads[size_t(h)].offset + j0) * v_entry_bytes(), out, head_dim_v_,
                    n);
}

void FlatKvCache::rewrite_keys(int l, int h, int32_t n, const float* k, const int32_t* pos) {
  LayerKv& L = layers_[size_t(l)];
  const HeadSegment& s = L.heads[size_t(h)];
  if (n > s.len) fail("INTERNAL", "rewriting more keys than the head holds");
  kv::encode(format_.k, format_.rotate_k(), k, L.k.data() + size_t(s.offset) * k_entry_bytes(), head_dim_, n);
  std::memcpy(L.pos.data() + size_t(s.offset) * 4, pos, size_t(n) * 4);
}

size_t FlatKvCache::bytes_used() const {
  size_t n = 0;
  for (const LayerKv& L : layers_)
    for (const HeadSegment& s : L.heads) n += size_t(s.len);
  return n * (k_entry_bytes() + v_entry_bytes());
}

size_t FlatKvCache::bytes_reserved() const {
  size_t n = 0;
  for (const LayerKv& L : layers_) n += size_t(L.capacity);
  return n * (k_entry_bytes() + v_entry_bytes() + 4);
}

bool FlatKvCache::is_uniform() const {
  for (const LayerKv& L : layers_)
    for (const HeadSegment& s : L.heads) {
      const HeadSegment& s0 = layers_[0].heads[0];
      if (s.len != s0.len) return false;
      if (s.len && std::memcmp(L.pos.data() + size_t(s.offset) * 4, layers_[0].pos.data() + size_t(s0.offset) * 4,
                               size_t(s.len) * 4) != 0)
        return false;
    }
  return true;
}

}  // namespace folio
