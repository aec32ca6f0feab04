// Re-based positions, for a document longer than the context's positions (docs/compression.md, "Reading a
// long document"): as StreamingLLM does, the entries a compressed cache keeps are given contiguous
// positions, every head's ending just before one common frontier, so that the tokens that follow continue
// from it. A key is stored after RoPE at its old position p; RoPE rotates each pair by an angle linear in
// the position, so rotating it once more by the angle of p' − p gives exactly the key at p' (up to the
// cache's rounding). Written once over the KV store interface, for every backend.
#pragma once
#include <cstdint>

#include "backend/kv-store.h"
#include "core/thread-pool.h"
#include "model/hparams.h"

namespace folio::forward {

// The frontier R = the most entries any head holds, at most max_frontier. Head g of layer l, holding n
// entries, gets the positions R − n .. R − 1, its keys rotated to them; a head holding more than R (Ada gives
// some heads far more than others) has its oldest entries share position 0, as if at the context's far end.
// freq_factors: the model's [rope_dim/2] divisors (host) or null. Returns R, the position the next token takes.
int32_t rebase_positions(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool,
                         int32_t max_frontier);

// Drops every entry whose position is in [from, to) and moves the entries after them back by to − from, their
// keys rotated to the new positions: the conversation's oldest turns forgotten, the rest unchanged relative to
// each other and to what comes before `from` (the document).
void forget_positions(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool,
                      int32_t from, int32_t to);

}  // namespace folio::forward
