// The compressor's hooks in the forward pass (docs/compression.md, "Scorers"). After layer l of a compressing
// prefill has read every token, its window scores are computed by the backend (where the cache is),
// downloaded (a few floats per entry) and the method's scorer ranks the entries on the host (kv::Compressor:
// one piece of code, so every backend keeps the same entries for the same scores); the layer is then cut in
// place, or, for the global schedule and kvzip, every layer once the chunk has passed them all.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/kv-store.h"
#include "core/thread-pool.h"
#include "kv/compressor.h"
#include "quant/weight.h"

namespace folio::forward {

// qwin: the window queries of layer l in the backend's memory, [w, n_head·head_dim]; `spare` free entries
// per head remain for the conversation.
void compress_layer(kv::Compressor& comp, backend::Backend& be, backend::KvStore& kv, ThreadPool& pool, int l,
                    const float* qwin, int32_t spare);
// Ranks layer l as it is now (kvzip, once the re-reading is over).
void rank_layer(kv::Compressor& comp, const backend::KvStore& kv, ThreadPool& pool, int l);
// Cuts layer l to what the compressor plans for it from its last scores.
void compact_layer(kv::Compressor& comp, backend::KvStore& kv, ThreadPool& pool, int l, int32_t spare);
// The prefix's queries before RoPE, q [m, n_head·head_dim] in the backend's memory, document tokens from
// `first` (ExpectedAttention's statistics).
void observe_queries(kv::Compressor& comp, backend::Backend& be, int l, const float* q, int64_t m, int32_t first);
// W_o^(h)ᵀ W_o^(h) of every query head's slice of an output projection wo ([n_head·head_dim_v] -> [n_embd], host
// memory): [n_head, Dv, Dv] (CriticalKV's and DefensiveKV's value norms).
std::vector<float> value_gram(const Weight& wo, int n_head, int head_dim_v, ThreadPool& pool);

}  // namespace folio::forward
