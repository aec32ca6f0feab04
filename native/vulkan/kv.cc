// The KV cache on the device (kv/flat-cache.h's layout, folio_gpu_kv_layer): append, compaction, and the
// attention over it (shaders/kv_append, kv_lengths, kv_gather, attention .comp).
#include <algorithm>
#include <cmath>

#include "device.h"
#include "memory.h"
#include "ops.h"
#include "pipelines.h"

namespace folio::vulkan {

namespace {

constexpr int kMaxHeadDim = 256;  // attention.comp's shared query and per-invocation outputs
constexpr int kSlices = 16;       // attention's key slices per (query, head); see attention.comp
// The cache types (ggml ids, KvType).
constexpr int32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8;

// attention.comp's partial results, [m·n_head, kSlices, 2 + Dv] floats, kept between calls and grown.
void* g_part = nullptr;
size_t g_part_bytes = 0;

// The bytes of an entry of dim numbers of a cache type (kv::entry_bytes): blocks of 32 of 34 (Q8_0) or 18
// (Q4_0) bytes, the last one shorter (2 + len, 2 + len/2); 0 for a type the kernels do not read.
int64_t entry_bytes(int32_t type, int32_t dim) {
  switch (type) {
    case kF32: return int64_t(dim) * 4;
    case kF16: return int64_t(dim) * 2;
    case kQ8_0: return int64_t(dim / 32) * 34 + (dim % 32 ? 2 + dim % 32 : 0);
    case kQ4_0: return int64_t(dim / 32) * 18 + (dim % 32 ? 2 + dim % 32 / 2 : 0);
  }
  return 0;
}

// A unit of a kv_gather copy: 4, 2 or 1 bytes, the largest that divides the entry size and both addresses.
int32_t copy_unit(int32_t bytes, const void* a, const void* b) {
  for (int32_t u : {4, 2})
    if (bytes % u == 0 && addr(a) % uint64_t(u) == 0 && addr(b) % uint64_t(u) == 0) return u;
  return 1;
}

}  // namespace

int check_layer(const char* what, const folio_gpu_kv_layer& L) {
  if (L.n_head_kv <= 0 || L.head_dim <= 0 || L.head_dim_v <= 0) return fail(what, "empty KV layer shape");
  for (int32_t type : {L.k_type, L.v_type})
    if (!entry_bytes(type, 1)) return fail(what, "KV types must be F32 (0), F16 (1), Q8_0 (8) or Q4_0 (2)");
  if ((L.k_type == kQ4_0 && L.head_dim % 2) || (L.v_type == kQ4_0 && L.head_dim_v % 2))
    return fail(what, "a Q4_0 cache needs heads of an even size");
  // The kernels address entries by these sizes and read blocks by the layout: the two must agree.
  if (L.k_bytes != entry_bytes(L.k_type, L.head_dim) || L.v_bytes != entry_bytes(L.v_type, L.head_dim_v))
    return fail(what, "k_bytes / v_bytes are not the entry sizes of k_type / v_type");
  return 0;
}

int kv_append(const folio_gpu_kv_layer* L, const float* k, const float* v, const int32_t* pos, int32_t n) {
  if (n <= 0) return 0;
  if (int e = check_layer("kv_append", *L)) return e;
  if (int64_t(n) * L->n_head_kv * std::max(L->head_dim, L->head_dim_v) > 0x7fffffff)
    return fail("kv_append", "more than 2^31 values");
  struct {
    uint64_t kc, vc, pos_c, offset, len, k, v, pos;
    int32_t n, Hk, D, Dv, k_type, v_type, kb, vb;
  } push{addr(L->k), addr(L->v),   addr(L->pos), addr(L->offset), addr(L->len), addr(k),   addr(v),    addr(pos),
         n,          L->n_head_kv, L->head_dim,  L->head_dim_v,   L->k_type,    L->v_type, L->k_bytes, L->v_bytes};
  if (int e = dispatch_rows(Kernel::KvAppend, &push, sizeof push, int64_t(n) * L->n_head_kv)) return e;
  struct {
    uint64_t len;
    int32_t Hk, n;
  } lengths{addr(L->len), L->n_head_kv, n};
  return dispatch(Kernel::KvLengths, &lengths, sizeof lengths, uint32_t((L->n_head_kv + 63) / 64), 1, 1);
}

int attention(const float* q, const folio_gpu_kv_layer* L, int32_t m, int32_t n_head, int32_t n_swa, float* out) {
  if (m <= 0) return 0;
  if (int e = check_layer("attention", *L)) return e;
  if (n_head <= 0 || n_head % L->n_head_kv) return fail("attention", "n_head must be a multiple of n_head_kv");
  if (L->head_dim > kMaxHeadDim || L->head_dim_v > kMaxHeadDim)
    return fail("attention", "head dimensions above 256 are not supported");
  if (int64_t(m) * n_head * std::max(L->head_dim, L->head_dim_v) > 0x7fffffff)
    return fail("attention", "more than 2^31 values");
  const int64_t items = int64_t(m) * n_head;
  const size_t need = size_t(items) * kSlices * size_t(2 + L->head_dim_v) * sizeof(float);
  if (need / sizeof(float) > 0x7fffffff) return fail("attention", "more than 2^31 partial values");
  if (need > g_part_bytes) {
    if (g_part && free_memory(g_part)) return 1;
    g_part = nullptr, g_part_bytes = 0;
    if (int e = alloc(need, &g_part)) return e;
    g_part_bytes = need;
  }
  struct {
    uint64_t kc, vc, offset, len, pos, q, part;
    int32_t m, n_head, Hk, D, Dv, k_type, v_type, kb, vb, S;
    float scale;
    int32_t n_swa;
  } push{addr(L->k),   addr(L->v), addr(L->offset), addr(L->len), addr(L->pos), addr(q),
         addr(g_part), m,          n_head,          L->n_head_kv, L->head_dim,  L->head_dim_v,
         L->k_type,    L->v_type,  L->k_bytes,      L->v_bytes,   kSlices,      1.0f / std::sqrt(float(L->head_dim)),
         n_swa};
  const uint32_t gx = uint32_t(items < 65535 ? items : 65535), gy = uint32_t((items + 65534) / 65535);
  if (int e = dispatch(Kernel::Attention, &push, sizeof push, gx, gy, kSlices)) return e;
  struct {
    uint64_t part, out;
    int32_t items, Dv, S;
  } merge{addr(g_part), addr(out), int32_t(items), L->head_dim_v, kSlices};
  return dispatch_rows(Kernel::AttentionMerge, &merge, sizeof merge, items);
}

void release_attention_scratch() { g_part = nullptr, g_part_bytes = 0; }

int kv_gather(const folio_gpu_kv_layer* src, const folio_gpu_kv_layer* dst, const int32_t* keep,
              const int64_t* start_host) {
  if (int e = check_layer("kv_gather", *src)) return e;
  if (src->k_type != dst->k_type || src->v_type != dst->v_type || src->k_bytes != dst->k_bytes ||
      src->v_bytes != dst->v_bytes || src->head_dim != dst->head_dim || src->head_dim_v != dst->head_dim_v ||
      src->n_head_kv != dst->n_head_kv)
    return fail("kv_gather", "source and destination layers differ in shape or type");
  for (int32_t g = 0; g < src->n_head_kv; g++) {
    const int64_t cnt = start_host[g + 1] - start_host[g];
    if (cnt < 0 || cnt > 0x7fffffff) return fail("kv_gather", "bad keep ranges");
    struct {
      uint64_t sk, sv, dk, dv, spos, dpos, soff, doff, keep;
      int64_t start;
      int32_t g, cnt, kb, vb, ku, vu;
    } push{addr(src->k),
           addr(src->v),
           addr(dst->k),
           addr(dst->v),
           addr(src->pos),
           addr(dst->pos),
           addr(src->offset),
           addr(dst->offset),
           addr(keep),
           start_host[g],
           g,
           int32_t(cnt),
           src->k_bytes,
           src->v_bytes,
           copy_unit(src->k_bytes, src->k, dst->k),
           copy_unit(src->v_bytes, src->v, dst->v)};
    if (int e = dispatch_rows(Kernel::KvGather, &push, sizeof push, cnt)) return e;
  }
  return 0;
}

}  // namespace folio::vulkan
