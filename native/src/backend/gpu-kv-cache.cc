#include "backend/gpu-kv-cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kv/hadamard.h"

namespace folio::gpu {

namespace {

KvFormat checked(const KvFormat& f, int head_dim, int head_dim_v) {
  kv::check_format(f, head_dim, head_dim_v);
  return f;
}

}  // namespace

void rotate_rows(const folio_gpu_api& api, float* x, int64_t rows, int dim) {
  const int block = kv::hadamard_block(dim);
  if (block < 2 || rows <= 0) return;
  if (!api.hadamard) fail("GPU_ERROR", "hadamard is missing from the GPU operation table");
  check(api, api.hadamard(x, rows * (dim / block), block), "GPU rotation");
}

KvCache::KvCache(const folio_gpu_api& api, int n_layer, int n_head_kv, int head_dim, int head_dim_v, KvFormat format)
    : api_(&api),
      layers_(size_t(n_layer)),
      n_head_kv_(n_head_kv),
      head_dim_(head_dim),
      head_dim_v_(head_dim_v),
      format_(checked(format, head_dim, head_dim_v)) {
  for (int l = 0; l < n_layer; l++) {
    Layer& L = layers_[size_t(l)];
    L.heads.resize(size_t(n_head_kv));
    L.offset = Buffer(*api_, size_t(n_head_kv) * 8);
    L.len = Buffer(*api_, size_t(n_head_kv) * 4);
    upload_segments(l);
  }
}

folio_gpu_kv_layer KvCache::layer(int l) const {
  const Layer& L = layers_[size_t(l)];
  folio_gpu_kv_layer d{};
  d.k = L.k.get();
  d.v = L.v.get();
  d.pos = L.pos.as<int32_t>();
  d.offset = L.offset.as<const int64_t>();
  d.len = L.len.as<int32_t>();
  d.n_head_kv = n_head_kv_;
  d.head_dim = head_dim_;
  d.head_dim_v = head_dim_v_;
  d.k_type = int32_t(format_.k);
  d.v_type = int32_t(format_.v);
  d.k_bytes = int32_t(k_entry_bytes());
  d.v_bytes = int32_t(v_entry_bytes());
  return d;
}

void KvCache::upload_segments(int l) {
  Layer& L = layers_[size_t(l)];
  std::vector<int64_t> off(L.heads.size());
  std::vector<int32_t> len(L.heads.size());
  for (size_t h = 0; h < L.heads.size(); h++) off[h] = L.heads[h].offset, len[h] = L.heads[h].len;
  L.offset.upload(off.data(), off.size() * 8);
  L.len.upload(len.data(), len.size() * 4);
}

KvCache KvCache::clone() const {
  KvCache c(*api_, n_layer(), n_head_kv_, head_dim_, head_dim_v_, format());
  const folio_gpu_api& g = *api_;
  for (size_t l = 0; l < layers_.size(); l++) {
    const Layer& s = layers_[l];
    Layer& d = c.layers_[l];
    d.heads = s.heads;
    d.pos_host = s.pos_host;
    d.capacity = s.capacity;
    if (s.capacity) {
      d.k = Buffer(*api_, s.k.bytes());
      d.v = Buffer(*api_, s.v.bytes());
      d.pos = Buffer(*api_, s.pos.bytes());
      check(g, g.copy(d.k.get(), s.k.get(), s.k.bytes()), "GPU copy");
      check(g, g.copy(d.v.get(), s.v.get(), s.v.bytes()), "GPU copy");
      check(g, g.copy(d.pos.get(), s.pos.get(), s.pos.bytes()), "GPU copy");
    }
    c.upload_segments(int(l));
  }
  return c;
}

void KvCache::relayout(int l, const std::vector<int32_t>& caps) {
  Layer& L = layers_[size_t(l)];
  const folio_gpu_api& g = *api_;
  Layer next;
  next.heads = lay_out(L.heads, caps, &next.capacity);
  next.k = Buffer(*api_, size_t(next.capacity) * k_entry_bytes());
  next.v = Buffer(*api_, size_t(next.capacity) * v_entry_bytes());
  next.pos = Buffer(*api_, size_t(next.capacity) * 4);
  next.offset = std::move(L.offset);
  next.len = std::move(L.len);
  next.pos_host.assign(size_t(next.capacity), 0);
  for (size_t h = 0; h < L.heads.size(); h++) {
    const HeadSegment &s = L.heads[h], &d = next.heads[h];
    if (s.len == 0) continue;
    check(g,
          g.copy(next.k.as<char>() + size_t(d.offset) * k_entry_bytes(),
                 L.k.as<char>() + size_t(s.offset) * k_entry_bytes(), size_t(s.len) * k_entry_bytes()),
          "GPU copy");
    check(g,
          g.copy(next.v.as<char>() + size_t(d.offset) * v_entry_bytes(),
                 L.v.as<char>() + size_t(s.offset) * v_entry_bytes(), size_t(s.len) * v_entry_bytes()),
          "GPU copy");
    check(g,
          g.copy(next.pos.as<char>() + size_t(d.offset) * 4, L.pos.as<char>() + size_t(s.offset) * 4,
                 size_t(s.len) * 4),
          "GPU copy");
    std::memcpy(next.pos_host.data() + d.offset, L.pos_host.data() + s.offset, size_t(s.len) * 4);
  }
  // The copies read the old buffers, which are freed here: wait for them first.
  check(g, g.synchronize(), "GPU KV re-layout");
  L = std::move(next);
  upload_segments(l);
}

void KvCache::reserve(int l, int32_t n, int32_t slack) {
  Layer& L = layers_[size_t(l)];
  bool fits = true;
  for (const HeadSegment& s : L.heads) fits = fits && s.len + n <= s.cap;
  if (fits) return;
  std::vector<int32_t> caps(L.heads.size());
  for (size_t h = 0; h < caps.size(); h++) caps[h] = std::max(L.heads[h].cap, L.heads[h].len + n + std::max(slack, 0));
  relayout(l, caps);
}

void KvCache::append(int l, const float* k, const float* v, const int32_t* pos, const int32_t* pos_host, int32_t n) {
  Layer& L = layers_[size_t(l)];
  for (const HeadSegment& s : L.heads)
    if (s.len + n > s.cap) fail("INTERNAL", "KV cache append without reserved room");
  const folio_gpu_kv_layer d = layer(l);
  if (format_.rotate_k() || format_.rotate_v()) {  // the new entries rotated, in a copy (the caller's stay)
    const int64_t rows = int64_t(n) * n_head_kv_;
    const size_t kn = size_t(rows) * size_t(head_dim_), vn = size_t(rows) * size_t(head_dim_v_);
    float* rk = scratch(kn + vn);
    float* rv = rk + kn;
    if (format_.rotate_k()) {
      check(*api_, api_->copy(rk, k, kn * sizeof(float)), "GPU copy");
      rotate_rows(*api_, rk, rows, head_dim_);
      k = rk;
    }
    if (format_.rotate_v()) {
      check(*api_, api_->copy(rv, v, vn * sizeof(float)), "GPU copy");
      rotate_rows(*api_, rv, rows, head_dim_v_);
      v = rv;
    }
  }
  check(*api_, api_->kv_append(&d, k, v, pos, n), "GPU KV append");
  for (HeadSegment& s : L.heads) {  // the device lengths were advanced by kv_append
    std::memcpy(L.pos_host.data() + s.offset + s.len, pos_host, size_t(n) * 4);
    s.len += n;
  }
}

void KvCache::compact(int l, const std::vector<std::vector<int32_t>>& keep, int32_t spare) {
  Layer& L = layers_[size_t(l)];
  const size_t Hk = L.heads.size();
  std::vector<int64_t> start(Hk + 1, 0);
  std::vector<int32_t> flat;
  for (size_t h = 0; h < Hk; h++) {
    int32_t prev = -1;
    for (int32_t j : keep[h]) {
      if (j <= prev || j >= L.heads[h].len) fail("INTERNAL", "compaction indices must ascend within the head");
      prev = j;
    }
    flat.insert(flat.end(), keep[h].begin(), keep[h].end());
    start[h + 1] = start[h] + int64_t(keep[h].size());
  }
  // The new layout: each head's kept entries, then `spare` free ones.
  Layer next;
  std::vector<HeadSegment> kept(Hk);
  std::vector<int32_t> caps(Hk);
  for (size_t h = 0; h < Hk; h++) kept[h].len = int32_t(keep[h].size()), caps[h] = kept[h].len + std::max(spare, 0);
  next.heads = lay_out(kept, caps, &next.capacity);
  next.k = Buffer(*api_, size_t(next.capacity) * k_entry_bytes());
  next.v = Buffer(*api_, size_t(next.capacity) * v_entry_bytes());
  next.pos = Buffer(*api_, size_t(next.capacity) * 4);
  next.offset = Buffer(*api_, Hk * 8);
  next.len = Buffer(*api_, Hk * 4);
  next.pos_host.assign(size_t(next.capacity), 0);
  for (size_t h = 0; h < Hk; h++)
    for (size_t i = 0; i < keep[h].size(); i++)
      next.pos_host[size_t(next.heads[h].offset) + i] = L.pos_host[size_t(L.heads[h].offset + keep[h][i])];
  Buffer idx(*api_, std::max<size_t>(flat.size(), 1) * 4);
  idx.upload(flat.data(), flat.size() * 4);
  std::swap(layers_[size_t(l)], next);  // `next` now holds the old layer
  upload_segments(l);
  const folio_gpu_kv_layer src = [&] {
    folio_gpu_kv_layer d = layer(l);
    d.k = next.k.get();
    d.v = next.v.get();
    d.pos = next.pos.as<int32_t>();
    d.offset = next.offset.as<const int64_t>();
    d.len = next.len.as<int32_t>();
    return d;
  }();
  const folio_gpu_kv_layer dst = layer(l);
  check(*api_, api_->kv_gather(&src, &dst, idx.as<int32_t>(), start.data()), "GPU KV compaction");
  // The gather reads the old buffers: wait for it before they are freed (when `next` goes out of scope).
  check(*api_, api_->synchronize(), "GPU KV compaction");
}

void KvCache::truncate(int32_t p) {
  for (int l = 0; l < n_layer(); l++) {
    Layer& L = layers_[size_t(l)];
    bool changed = false;
    for (HeadSegment& s : L.heads) {
      const int32_t* pos = L.pos_host.data() + s.offset;
      while (s.len > 0 && pos[s.len - 1] >= p) s.len--, changed = true;
    }
    if (changed) upload_segments(l);
  }
}

void KvCache::read(int l, int h, int32_t n, float* out, bool values) const {
  const Layer& L = layers_[size_t(l)];
  const int dim = values ? head_dim_v_ : head_dim_;
  const size_t eb = values ? v_entry_bytes() : k_entry_bytes();
  const Buffer& b = values ? L.v : L.k;
  const size_t off = size_t(L.heads[size_t(h)].offset) * eb;
  std::vector<uint8_t> raw(size_t(n) * eb);
  b.download(raw.data(), raw.size(), off);
  kv::decode(values ? format_.v : format_.k, values ? format_.rotate_v() : format_.rotate_k(), raw.data(), out, dim, n);
}

void KvCache::read_k(int l, int h, int32_t n, float* out) const { read(l, h, n, out, false); }

void KvCache::read_pos(int l, int h, int32_t n, int32_t* out) const {
  const Layer& L = layers_[size_t(l)];
  std::memcpy(out, L.pos_host.data() + L.heads[size_t(h)].offset, size_t(n) * 4);
}

void KvCache::rewrite_keys(int l, int h, int32_t n, const float* k, const int32_t* pos) {
  Layer& L = layers_[size_t(l)];
  const HeadSegment& s = L.heads[size_t(h)];
  if (n > s.len) fail("INTERNAL", "rewriting more keys than the head holds");
  std::vector<uint8_t> raw(size_t(n) * k_entry_bytes());
  kv::encode(format_.k, format_.rotate_k(), k, raw.data(), head_dim_, n);
  L.k.upload(raw.data(), raw.size(), size_t(s.offset) * k_entry_bytes());
  L.pos.upload(pos, size_t(n) * 4, size_t(s.offset) * 4);
  std::memcpy(L.pos_host.data() + s.offset, pos, size_t(n) * 4);
}

float* KvCache::scratch(size_t floats) const {
  if (scratch_.bytes() < floats * sizeof(float)) {
    check(*api_, api_->synchronize(), "GPU scratch");  // queued operations may still read the old one
    scratch_ = Buffer(*api_, floats * sizeof(float));
  }
  return scratch_.as<float>();
}

const float* KvCache::rotated_queries(const float* q, int64_t rows) const {
  if (!format_.rotate_k()) return q;
  float* r = scratch(size_t(rows) * size_t(head_dim_));
  check(*api_, api_->copy(r, q, size_t(rows) * size_t(head_dim_) * sizeof(float)), "GPU copy");
  rotate_rows(*api_, r, rows, head_dim_);
  return r;
}

size_t KvCache::bytes_reserved() const {
  size_t n = 0;
  for (const Layer& L : layers_) n += size_t(L.capacity);
  return n * (k_entry_bytes() + v_entry_bytes() + 4);
}
void KvCache::read_v(int l, int h, int32_t n, float* out) const { read(l, h, n, out, true); }

FlatKvCache KvCache::to_host() const {
  FlatKvCache c(n_layer(), n_head_kv_, head_dim_, head_dim_v_, format());
  std::vector<uint8_t> k, v;
  for (int l = 0; l < n_layer(); l++) {
    const Layer& L = layers_[size_t(l)];
    std::vector<int32_t> caps(L.heads.size());
    for (size_t h = 0; h < caps.size(); h++) caps[h] = L.heads[h].cap;
    c.reserve_heads(l, caps);
    for (size_t h = 0; h < L.heads.size(); h++) {
      const HeadSegment& s = L.heads[h];
      k.resize(size_t(s.len) * k_entry_bytes());
      v.resize(size_t(s.len) * v_entry_bytes());
      L.k.download(k.data(), k.size(), size_t(s.offset) * k_entry_bytes());
      L.v.download(v.data(), v.size(), size_t(s.offset) * v_entry_bytes());
      c.append_raw(l, int(h), L.pos_host.data() + s.offset, k.data(), v.data(), s.len);
    }
  }
  return c;
}

KvCache KvCache::from_host(const folio_gpu_api& api, const FlatKvCache& c) {
  KvCache d(api, c.n_layer(), c.n_head_kv(), c.head_dim(), c.head_dim_v(), c.format());
  for (int l = 0; l < c.n_layer(); l++) {
    const LayerKv& src = c.layer(l);
    Layer& L = d.layers_[size_t(l)];
    L.heads = src.heads;
    L.capacity = src.capacity;
    L.k = Buffer(api, size_t(src.capacity) * d.k_entry_bytes());
    L.v = Buffer(api, size_t(src.capacity) * d.v_entry_bytes());
    L.pos = Buffer(api, size_t(src.capacity) * 4);
    L.pos_host.assign(size_t(src.capacity), 0);
    for (const HeadSegment& s : src.heads) {
      L.k.upload(src.k.data() + size_t(s.offset) * d.k_entry_bytes(), size_t(s.len) * d.k_entry_bytes(),
                 size_t(s.offset) * d.k_entry_bytes());
      L.v.upload(src.v.data() + size_t(s.offset) * d.v_entry_bytes(), size_t(s.len) * d.v_entry_bytes(),
                 size_t(s.offset) * d.v_entry_bytes());
      L.pos.upload(src.pos.data() + size_t(s.offset) * 4, size_t(s.len) * 4, size_t(s.offset) * 4);
      std::memcpy(L.pos_host.data() + s.offset, src.pos.data() + size_t(s.offset) * 4, size_t(s.len) * 4);
    }
    d.upload_segments(l);
  }
  return d;
}

}  // namespace folio::gpu
