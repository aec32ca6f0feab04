// The exact Ada-KV selections on the device (kv/allocator.cc's global_topk_counts and top_tokens), by
// radix select over 64-bit composites (shaders/select.glsl, sel_hist, sel_digit, sel_count, sel_tokens).
#include <algorithm>
#include <vector>

#include "device.h"
#include "memory.h"
#include "ops.h"
#include "pipelines.h"

namespace folio::vulkan {

namespace {

// select.glsl's Segment (std430: 24 bytes).
struct Segment {
  uint64_t prefix = 0;
  uint32_t remaining = 0;
  uint32_t pad = 0;
  int64_t start = 0;
};
static_assert(sizeof(Segment) == 24, "select.glsl's layout");

// Device buffers of one selection, freed on every path out (free waits for the queued work).
struct Scratch {
  void* seg = nullptr;
  void* hist = nullptr;
  void* won = nullptr;
  ~Scratch() {
    free_memory(seg);
    free_memory(hist);
    free_memory(won);
  }
};

// Settles every segment's k-th largest composite: eight digit passes over score [Hk, n].
int radix_select(const float* score, int32_t Hk, int32_t n, bool per_head, const std::vector<Segment>& segs,
                 Scratch& s) {
  const size_t count = segs.size();
  if (int e = alloc(count * sizeof(Segment), &s.seg)) return e;
  if (int e = alloc(count * 256 * 4, &s.hist)) return e;
  if (int e = upload(s.seg, segs.data(), count * sizeof(Segment))) return e;
  if (int e = zero(s.hist, count * 256 * 4)) return e;
  for (int shift = 56; shift >= 0; shift -= 8) {
    struct {
      uint64_t score, seg, hist;
      int32_t Hk, n, per_head, shift;
    } hist{addr(score), addr(s.seg), addr(s.hist), Hk, n, per_head ? 1 : 0, shift};
    if (int e = dispatch_1d(Kernel::SelHist, &hist, sizeof hist, int64_t(Hk) * n)) return e;
    struct {
      uint64_t seg, hist;
      int32_t segments, shift;
    } digit{addr(s.seg), addr(s.hist), int32_t(count), shift};
    if (int e = dispatch(Kernel::SelDigit, &digit, sizeof digit, uint32_t((count + 63) / 64), 1, 1)) return e;
  }
  return 0;
}

}  // namespace

int topk_per_head(const float* score, int32_t Hk, int32_t n, int64_t k, int32_t* won_host) {
  if (Hk <= 0 || n < 0) return fail("topk_per_head", "bad shape");
  if (k < 0 || k > int64_t(Hk) * n) return fail("topk_per_head", "k must be within 0 .. Hk·n");
  if (int64_t(Hk) * n > 0x7fffffff) return fail("topk_per_head", "more than 2^31 scores");
  std::fill(won_host, won_host + Hk, 0);
  if (k == 0) return synchronize();
  Scratch s;
  Segment all;
  all.remaining = uint32_t(k);
  if (int e = radix_select(score, Hk, n, false, {all}, s)) return e;
  if (int e = alloc(size_t(Hk) * 4, &s.won)) return e;
  if (int e = zero(s.won, size_t(Hk) * 4)) return e;
  struct {
    uint64_t score, seg, won;
    int32_t Hk, n;
  } count{addr(score), addr(s.seg), addr(s.won), Hk, n};
  if (int e = dispatch_1d(Kernel::SelCount, &count, sizeof count, int64_t(Hk) * n)) return e;
  return download(won_host, s.won, size_t(Hk) * 4);
}

int top_tokens(const float* score, int32_t Hk, int32_t n, const int32_t* caps_host, int32_t* out) {
  if (Hk <= 0 || n < 0) return fail("top_tokens", "bad shape");
  if (int64_t(Hk) * n > 0x7fffffff) return fail("top_tokens", "more than 2^31 scores");
  std::vector<Segment> segs(static_cast<size_t>(Hk));
  int64_t start = 0;
  for (int32_t g = 0; g < Hk; g++) {
    if (caps_host[g] < 0) return fail("top_tokens", "a negative cap");
    segs[size_t(g)].remaining = uint32_t(std::min(caps_host[g], n));
    segs[size_t(g)].start = start;
    start += caps_host[g];
  }
  if (start == 0) return 0;
  Scratch s;
  if (int e = radix_select(score, Hk, n, true, segs, s)) return e;
  struct {
    uint64_t score, seg, out;
    int32_t Hk, n;
  } write{addr(score), addr(s.seg), addr(out), Hk, n};
  return dispatch(Kernel::SelTokens, &write, sizeof write, uint32_t(Hk), 1, 1);
}

}  // namespace folio::vulkan
