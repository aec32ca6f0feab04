#include "forward/weights.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "core/error.h"

namespace folio::forward {

Weight BackendWeights::upload(backend::Backend& be, const Weight& w, int64_t row_unit) {
  if (!w) return {};
  for (const auto& [host, d] : uploaded_)
    if (host == w.data) return d;
  // Rows [r0, r0 + n) into an allocation of their own. Reads the mapped file: the pages come in once and
  // can be dropped again.
  auto put = [&](int64_t r0, int64_t n) {
    const size_t size = size_t(n) * w.row_bytes;
    backend::Buffer b(be, size);
    be.upload(b.get(), w.row(r0), size);
    const uint8_t* p = b.as<const uint8_t>();
    bytes_ += size;
    buffers_.push_back(std::move(b));
    return p;
  };
  Weight d = w;
  const size_t size = size_t(w.rows) * w.row_bytes, most = be.max_allocation();
  if (most == 0 || size <= most) {
    d.data = put(0, w.rows);
  } else {
    // Larger than the device allocates at once: parts of whole rows (of whole experts), each as large as fits.
    const size_t unit_bytes = size_t(row_unit) * w.row_bytes;
    if (unit_bytes > most)
      fail("GPU_ALLOCATION_LIMIT",
           strfmt("a %lld x %lld %s weight needs allocations of %zu bytes, more than this GPU makes at once (%zu): "
                  "run the model on the CPU (backend 'cpu') or use a smaller quantization",
                  (long long)w.rows, (long long)w.cols, type_name(w.type), unit_bytes, most));
    const int64_t per = int64_t(most / unit_bytes) * row_unit;
    auto parts = std::make_unique<std::vector<WeightPart>>();
    for (int64_t r0 = 0; r0 < w.rows; r0 += per) {
      const int64_t n = std::min(per, w.rows - r0);
      parts->push_back({put(r0, n), r0, n});
    }
    d.data = parts->front().data;
    d.parts = parts.get();
    parts_.push_back(std::move(parts));
  }
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
  static std::map<std::pair<const Model*, const backend::Backend*>, std::weak_ptr<const BackendWeights>> live;
  std::lock_guard<std::mutex> lock(mu);
  if (auto w = live[{&model, &be}].lock()) return w;
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
                            {&D.ffn_gate_inp, &L.ffn_gate_inp}})
      *dst = w->upload(be, *src);
    // a split of the experts' stacks falls between two experts (expert_rows takes one part)
    const int X = std::max(model.hparams().n_expert, 1);
    for (auto [dst, src] :
         {std::pair{&D.gate_exps, &L.gate_exps}, {&D.up_exps, &L.up_exps}, {&D.down_exps, &L.down_exps}})
      *dst = w->upload(be, *src, src->rows / X);
    d.layers.push_back(D);
  }
  d.total_bytes = w->bytes_;
  w->w_ = &w->own_;
  live[{&model, &be}] = w;
  return w;
}

}  // namespace folio::forward
