// The Ada-KV scoring on the device: SnapKV window scores (kv/scorer.cc's snapkv_scores) in three passes,
// shaders/ws_stats, ws_attn, ws_pool .comp.
#include <cmath>

#include "device.h"
#include "memory.h"
#include "ops.h"
#include "pipelines.h"

namespace folio::vulkan {

namespace {

// ws_stats.comp's per-row (max, 1/sum), [Hk, G·w, 2] floats, kept between calls and grown.
void* g_stats = nullptr;
size_t g_stats_bytes = 0;

}  // namespace

int window_scores(const float* qw, const folio_gpu_kv_layer* L, int32_t n_head, int32_t Ln, int32_t w, int32_t kernel,
                  float* attn, float* score) {
  const int32_t Hk = L->n_head_kv;
  if (Hk <= 0 || n_head <= 0 || n_head % Hk) return fail("window_scores", "n_head must be a multiple of n_head_kv");
  if (int e = check_layer("window_scores", *L)) return e;
  if (w <= 0 || w > Ln) return fail("window_scores", "the window must hold 1 to L entries");
  if (kernel < 1) return fail("window_scores", "the pooling kernel must be at least 1");
  const int64_t R = int64_t(n_head / Hk) * w;
  if (int64_t(Hk) * Ln > 0x7fffffff || int64_t(w) * n_head * L->head_dim > 0x7fffffff)
    return fail("window_scores", "more than 2^31 values");
  const size_t need = size_t(Hk) * size_t(R) * 2 * sizeof(float);
  if (need > g_stats_bytes) {
    if (g_stats && free_memory(g_stats)) return 1;
    g_stats = nullptr, g_stats_bytes = 0;
    if (int e = alloc(need, &g_stats)) return e;
    g_stats_bytes = need;
  }
  struct {
    uint64_t kc, offset, qw, stats;
    int32_t Hk, n_head, L, w, D, k_type, kb;
    float scale;
  } stats{addr(L->k),  addr(L->offset), addr(qw),   addr(g_stats),
          Hk,          n_head,          Ln,         w,
          L->head_dim, L->k_type,       L->k_bytes, 1.0f / std::sqrt(float(L->head_dim))};
  if (int e = dispatch_rows(Kernel::WsStats, &stats, sizeof stats, int64_t(Hk) * R)) return e;
  struct {
    uint64_t kc, offset, qw, stats, attn;
    int32_t Hk, n_head, L, w, D, k_type, kb;
    float scale;
  } pass2{addr(L->k), addr(L->offset), addr(qw),  addr(g_stats), addr(attn), Hk, n_head, Ln,
          w,          L->head_dim,     L->k_type, L->k_bytes,    stats.scale};
  if (int e = dispatch_1d(Kernel::WsAttn, &pass2, sizeof pass2, int64_t(Hk) * Ln)) return e;
  struct {
    uint64_t attn, score;
    int32_t Hk, L, n, kernel;
  } pool{addr(attn), addr(score), Hk, Ln, Ln - w, kernel};
  return dispatch_1d(Kernel::WsPool, &pool, sizeof pool, int64_t(Hk) * (Ln - w));
}

void release_scoring_scratch() { g_stats = nullptr, g_stats_bytes = 0; }

}  // namespace folio::vulkan
