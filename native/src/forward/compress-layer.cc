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
  const int32_t w = s.w;
  std::vector<int32_t> lens(static_cast<size_t>(Hk));  // [Hk] entries of each head, the last w the window
  for (int g = 0; g < Hk; g++) lens[size_t(g)] = kv.len(l, g);
  const int32_t M = *std::max_element(lens.begin(), lens.end());
  comp.note_reserved(kv.bytes_reserved());  // the layer holds its new tokens: the read's high-water mark
  const auto t0 = std::chrono::steady_clock::now();
  backend::Buffer attn(be, size_t(Hk) * size_t(M) * sizeof(float));                    // [Hk, M]
  backend::Buffer score(be, size_t(Hk) * size_t(std::max(M - w, 1)) * sizeof(float));  // [Hk, M − w]
  be.window_scores(qwin, kv, l, s.n_head, lens.data(), w, comp.options().kernel, attn.as<float>(), score.as<float>());
  kv::WindowScores ws;
  ws.attn.resize(size_t(Hk));
  ws.score.resize(size_t(Hk));
  for (int g = 0; g < Hk; g++) {
    const int32_t n = lens[size_t(g)];
    ws.attn[size_t(g)].resize(size_t(n));
    ws.score[size_t(g)].resize(size_t(n - w));
    be.download(ws.attn[size_t(g)].data(), attn.as<float>() + int64_t(g) * M, size_t(n) * sizeof(float));
    if (n > w)
      be.download(ws.score[size_t(g)].data(), score.as<float>() + int64_t(g) * (M - w), size_t(n - w) * sizeof(float));
  }
  // The window queries on the host too: the attention-loss measurement reads them.
  be.download(comp.window_queries(), qwin, size_t(w) * size_t(s.n_head) * size_t(s.head_dim) * sizeof(float));
  const double ms_score = ms_since(t0);

  const kv::EntryReader keys = [&](int g, float* out) { kv.read_k(l, g, lens[size_t(g)], out); };
  const kv::EntryReader values = [&](int g, float* out) { kv.read_v(l, g, lens[size_t(g)], out); };
  const std::vector<std::vector<int32_t>> keep = comp.plan_layer(pool, l, lens, ws, ms_score, keys, values);
  const auto t1 = std::chrono::steady_clock::now();
  if (comp.compacts(l)) kv.compact(l, keep, comp.room(spare));
  comp.add_compact_time(l, ms_since(t1));
}

}  // namespace folio::forward
