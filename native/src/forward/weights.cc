#include "forward/weights.h"

#include <map>
#include <mutex>

namespace folio::forward {

Weight BackendWeights::upload(backend::Backend& be, const Weight& w) {
  if (!w) return {};
  for (const auto& [host, d] : uploaded_)
    if (host == w.data) return d;
  const size_t size = size_t(w.rows) * w.row_bytes;
  backend::Buffer b(be, size);
  be.upload(b.get(), w.data, size);  // reads the mapped file: the pages come in once and can be dropped again
  Weight d = w;
  d.data = b.as<const uint8_t>();
  bytes_ += size;
  buffers_.push_back(std::move(b));
  uploaded_.emplace_back(w.data, d);
  return d;
}

std::shared_ptr<const BackendWeights> BackendWeights::of(const Model& model, backend::Backend& be, ThreadPool& pool) {
  if (be.host_memory()) {
    auto w = std::make_shared<BackendWeights>();
    w->w_ = &model.cpu_weights(pool);  // the model keeps them
    return w;
  }
  // One upload per model for as long as a context uses it. A model outlives its contexts (they hold it),
  // so an expired entry cannot be mistaken for a new model at the same address while it is alive.
  static std::mutex mu;
  static std::map<const Model*, std::weak_ptr<const BackendWeights>> live;
  std::lock_guard<std::mutex> lock(mu);
  if (auto w = live[&model].lock()) return w;
  auto w = std::make_shared<BackendWeights>();
  const ModelWeights& m = model.weights();
  ModelWeights& d = w->own_;
  d.tok_embd = w->upload(be, m.tok_embd);
  d.output_norm = w->upload(be, m.output_norm);
  d.output = w->upload(be, m.output);
  d.rope_freqs = w->upload(be, m.rope_freqs);
  d.rope_long = w->upload(be, m.rope_long);
  d.rope_short = w->upload(be, m.rope_short);
  for (const LayerWeights& L : m.layers) {
    LayerWeights D;
    for (auto [dst, src] : {std::pair{&D.attn_norm, &L.attn_norm},
                            {&D.wq, &L.wq},
                            {&D.wk, &L.wk},
                            {&D.wv, &L.wv},
                            {&D.bq, &L.bq},
                            {&D.bk, &L.bk},
                            {&D.bv, &L.bv},
                            {&D.q_norm, &L.q_norm},
                            {&D.k_norm, &L.k_norm},
                            {&D.wo, &L.wo},
                            {&D.ffn_norm, &L.ffn_norm},
                            {&D.w_gate, &L.w_gate},
                            {&D.w_up, &L.w_up},
                            {&D.w_down, &L.w_down},
                            {&D.attn_post_norm, &L.attn_post_norm},
                            {&D.ffn_post_norm, &L.ffn_post_norm},
                            {&D.ffn_gate_inp, &L.ffn_gate_inp},
                            {&D.gate_exps, &L.gate_exps},
                            {&D.up_exps, &L.up_exps},
                            {&D.down_exps, &L.down_exps}})
      *dst = w->upload(be, *src);
    d.layers.push_back(D);
  }
  d.total_bytes = w->bytes_;
  w->w_ = &w->own_;
  live[&model] = w;
  return w;
}

}  // namespace folio::forward
