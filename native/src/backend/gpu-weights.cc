#include "backend/gpu-weights.h"

#include <map>
#include <mutex>

namespace folio::gpu {

DeviceWeight Weights::upload(const Weight& w) {
  if (!w) return {};
  for (const auto& [host, d] : uploaded_)
    if (host == w.data) return d;
  const size_t size = size_t(w.rows) * w.row_bytes;
  Buffer b(size);
  b.upload(w.data, size);  // reads the mapped file: the pages come in once and can be dropped again
  DeviceWeight d;
  d.data = b.get();
  d.type = int32_t(w.type);
  d.rows = w.rows;
  d.cols = w.cols;
  d.ldw = w.row_bytes;
  bytes += size;
  buffers_.push_back(std::move(b));
  uploaded_.emplace_back(w.data, d);
  return d;
}

std::shared_ptr<const Weights> Weights::of(const Model& model) {
  // One upload per model for as long as a context uses it. A model outlives its contexts (they hold it),
  // so an expired entry cannot be mistaken for a new model at the same address while it is alive.
  static std::mutex mu;
  static std::map<const Model*, std::weak_ptr<const Weights>> live;
  std::lock_guard<std::mutex> lock(mu);
  if (auto w = live[&model].lock()) return w;
  auto w = std::make_shared<Weights>();
  const ModelWeights& m = model.weights();
  w->tok_embd = w->upload(m.tok_embd);
  w->output_norm = w->upload(m.output_norm);
  w->output = w->upload(m.output);
  w->rope_freqs = w->upload(m.rope_freqs);
  for (const LayerWeights& L : m.layers) {
    DeviceLayer d;
    d.attn_norm = w->upload(L.attn_norm);
    d.wq = w->upload(L.wq);
    d.wk = w->upload(L.wk);
    d.wv = w->upload(L.wv);
    d.bq = w->upload(L.bq);
    d.bk = w->upload(L.bk);
    d.bv = w->upload(L.bv);
    d.q_norm = w->upload(L.q_norm);
    d.k_norm = w->upload(L.k_norm);
    d.wo = w->upload(L.wo);
    d.ffn_norm = w->upload(L.ffn_norm);
    d.w_gate = w->upload(L.w_gate);
    d.w_up = w->upload(L.w_up);
    d.w_down = w->upload(L.w_down);
    w->layers.push_back(d);
  }
  live[&model] = w;
  return w;
}

}  // namespace folio::gpu
