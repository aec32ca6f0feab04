#include "forward/compress-layer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "quant/quant.h"

namespace folio::forward {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Activations on the host: the pointer itself on a host backend, else a downloaded copy in `tmp`.
const float* on_host(backend::Backend& be, const float* x, size_t count, std::vector<float>& tmp) {
  if (be.host_memory()) return x;
  tmp.resize(count);
  be.download(tmp.data(), x, count * sizeof(float));
  return tmp.data();
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
  if (comp.slides(l)) {                     // a sliding layer keeps its window: nothing to score
    comp.keep_window_layer(l, lens);
    if (!comp.deferred()) compact_layer(comp, kv, pool, l, spare);
    return;
  }
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
  // The window queries on the host too: the scorers and the attention-loss measurement read them.
  be.download(comp.window_queries(), qwin, size_t(w) * size_t(s.n_head) * size_t(s.head_dim) * sizeof(float));
  const kv::EntryReader keys = [&](int g, float* out) { kv.read_k(l, g, lens[size_t(g)], out); };
  const kv::EntryReader values = [&](int g, float* out) { kv.read_v(l, g, lens[size_t(g)], out); };
  comp.score_layer(pool, l, lens, ws, ms_since(t0), keys, values);
  if (!comp.deferred()) compact_layer(comp, kv, pool, l, spare);
}

namespace {
// Layer l's entries as they are now, through the compressor's readers.
struct LayerReaders {
  std::vector<int32_t> lens;
  kv::EntryReader keys, values;
  LayerReaders(const backend::KvStore& kv, int l) : lens(static_cast<size_t>(kv.n_head_kv())) {
    for (int g = 0; g < kv.n_head_kv(); g++) lens[size_t(g)] = kv.len(l, g);
    keys = [&kv, l, this](int g, float* out) { kv.read_k(l, g, lens[size_t(g)], out); };
    values = [&kv, l, this](int g, float* out) { kv.read_v(l, g, lens[size_t(g)], out); };
  }
};
}  // namespace

void rank_layer(kv::Compressor& comp, const backend::KvStore& kv, ThreadPool& pool, int l) {
  const LayerReaders r(kv, l);
  comp.rank_layer(pool, l, r.keys, r.values);
}

void compact_layer(kv::Compressor& comp, backend::KvStore& kv, ThreadPool& pool, int l, int32_t spare) {
  const LayerReaders r(kv, l);
  const std::vector<std::vector<int32_t>> keep = comp.plan_layer(pool, l, r.keys, r.values);
  const auto t1 = std::chrono::steady_clock::now();
  if (comp.compacts(l)) kv.compact(l, keep, comp.room(spare));
  comp.add_compact_time(l, ms_since(t1));
}

void observe_queries(kv::Compressor& comp, backend::Backend& be, int l, const float* q, int64_t m, int32_t first) {
  std::vector<float> tmp;
  const kv::WindowShape& s = comp.shape();
  comp.add_queries(l, on_host(be, q, size_t(m) * size_t(s.n_head) * size_t(s.head_dim), tmp), m, first);
}

std::vector<float> value_gram(const Weight& wo, int n_head, int head_dim_v, ThreadPool& pool) {
  const int64_t E = wo.rows, AW = wo.cols, Dv = head_dim_v;
  if (AW != int64_t(n_head) * Dv) fail("INTERNAL", "the output projection does not match the heads");
  std::vector<float> W(size_t(E) * size_t(AW));  // [E, AW] dequantized
  const quant::Kernels& kern = quant::kernels(wo.type);
  pool.parallel_for(E, [&](int64_t r, int) { kern.dequantize_row(wo.row(r), W.data() + r * AW, AW); });
  std::vector<float> gram(size_t(n_head) * size_t(Dv * Dv));
  pool.parallel_for(n_head, [&](int64_t h, int) {
    std::vector<double> acc(size_t(Dv * Dv), 0.0);
    for (int64_t r = 0; r < E; r++) {
      const float* x = W.data() + r * AW + h * Dv;
      for (int64_t a = 0; a < Dv; a++)
        for (int64_t c = 0; c < Dv; c++) acc[size_t(a * Dv + c)] += double(x[a]) * x[c];
    }
    for (int64_t i = 0; i < Dv * Dv; i++) gram[size_t(h * Dv * Dv + i)] = float(acc[size_t(i)]);
  });
  return gram;
}

}  // namespace folio::forward
