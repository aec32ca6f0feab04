// The forward pass of a decoder-only transformer (Llama, Qwen2, Qwen3, Phi-3, Gemma 3), once for every backend: each
// step an operation of backend/backend.h on activations in the backend's memory, the KV cache a backend store.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/kv-store.h"
#include "core/thread-pool.h"
#include "forward/control.h"
#include "forward/moe.h"
#include "kv/compressor.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace folio::forward {

// The attention each watched cache entry gets from the queries of a pass, folded (Backend::Fold): the largest
// or the sum, [layer][KV head][entry].
using AttentionWatch = std::vector<std::vector<std::vector<float>>>;

// The rotation of layer l's queries and keys: the model's, or for a sliding layer (gemma3) its own base and
// no scaling. mscale is the model's (LongRoPE); a re-basing, which turns keys by a change of position,
// sets it back to 1.
backend::RopeParams layer_rope(const HParams& hp, int l);

class ForwardPass {
 public:
  // n_batch: tokens per chunk of a prefill. `pool` runs the compressor's host work.
  ForwardPass(const HParams& hp, backend::Backend& be, ThreadPool& pool, int32_t n_batch)
      : hp_(hp), be_(be), pool_(pool), n_batch_(n_batch) {}

  // Runs n tokens at positions p0 .. p0 + n − 1 over the weights w (in the backend's memory) and appends
  // them to kv. Writes the logits (host memory) of every position ([n, n_vocab]) when all_logits, else of
  // the last one ([n_vocab]); none when logits is null. With a compressor, each layer is compressed as
  // soon as every token has passed it (forward/compress-layer.h); n_ctx bounds the room left after it.
  // With a watch ([layer][head][entry], sized to the entries to watch), the attention these tokens' queries
  // give each watched entry is folded into it (Backend::watch_attention): raised to the largest (a re-reading
  // for kvzip, a question scoring a conversation's old turns) or added (an answer's citations). Without one
  // the pass does no such work.
  void run(const ModelWeights& w, backend::KvStore& kv, const int32_t* tokens, int64_t n, int32_t p0, int32_t n_ctx,
           bool all_logits, float* logits, Control& ctl, kv::Compressor* comp, AttentionWatch* watch = nullptr,
           backend::Backend::Fold fold = backend::Backend::Fold::Max);

 private:
  float* floats(backend::Buffer& b, int64_t count);

  const HParams& hp_;
  backend::Backend& be_;
  ThreadPool& pool_;
  int32_t n_batch_;
  // Activations, grown as needed and kept across calls: x the residual stream of the call, the others a
  // chunk's (shapes in run()).
  backend::Buffer x_, xb_, q_, k_, v_, att_, ffa_, ffb_, qwin_, ids_, pos_, logits_;
  MoeScratch moe_;
  std::vector<int32_t> pos_host_;
};

}  // namespace folio::forward
