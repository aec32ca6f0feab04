#include "forward/compress-layer.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace folio::forward {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

void compress_layer(kv::Compressor& comp, backend::Backend& be, backend::KvStore& kv, ThreadPool& pool, int l,
                    const float* qwin, int32_t spare) {
  const kv::WindowShape& s = comp.shape();
  const int Hk = s.n_head_kv;
  const int32_t L = s.L, w = s.w;
  const auto t0 = std::chrono::steady_clock::now();
  backend::Buffer attn(be, size_t(Hk) * size_t(L) * sizeof(float));                    // [Hk, L]
  backend::Buffer score(be, size_t(Hk) * size_t(std::max(L - w, 1)) * sizeof(float));  // [Hk, L − w]
  be.window_scores(qwin, kv, l, s.n_head, L, w, comp.options().kernel, attn.as<float>(), score.as<float>());
  kv::WindowScores ws;
  ws.attn.assign(size_t(Hk), std::vector<float>(size_t(L)));
  ws.score.assign(size_t(Hk), std::vector<float>(size_t(L - w)));
  for (int g = 0; g < Hk; g++) {
    be.download(ws.attn[size_t(g)].data(), attn.as<float>() + int64_t(g) * L, size_t(L) * sizeof(float));
    if (L > w)
      be.download(ws.score[size_t(g)].data(), score.as<float>() + int64_t(g) * (L - w), size_t(L - w) * sizeof(float));
  }
  // The window queries on the host too: the attention-loss measurement reads them.
  be.download(comp.window_queries(), qwin, size_t(w) * size_t(s.n_head) * size_t(s.head_dim) * sizeof(float));
  const double ms_score = ms_since(t0);

  const kv::EntryReader keys = [&](int g, float* out) { kv.read_k(l, g, L, out); };
  const kv::EntryReader values = [&](int g, float* out) { kv.read_v(l, g, L, out); };
  const std::vector<std::vector<int32_t>> keep =
      comp.plan_layer(pool, l, ws, ms_score, kv.k_entry_bytes() + kv.v_entry_bytes(), keys, values);
  const auto t1 = std::chrono::steady_clock::now();
  if (comp.budget().compress) kv.compact(l, keep, spare);
  comp.add_compact_time(l, ms_since(t1));
}

}  // namespace folio::forward
