// Re-based positions, for a document longer than the context's positions (docs/compression.md, "Reading a
// long document"): as StreamingLLM does, the entries a compressed cache keeps are given contiguous
// positions, every head's ending just before one common frontier, so that the tokens that follow continue
// from it. A key is stored after RoPE at its old position p; RoPE rotates each pair by an angle linear in
// the position, so rotating it once more by the angle of p' − p gives exactly the key at p' (up to the
// cache's rounding). Written once over the KV store interface, for every backend.
#pragma once
#include <cstdint>
#include <vector>

#include "backend/kv-store.h"
#include "core/thread-pool.h"
#include "model/hparams.h"

namespace folio::forward {

// Rotates n keys of layer l, floats [n, head_dim] stored after RoPE, by delta[i] positions each: the key at p
// becomes exactly the key at p + delta[i] (RoPE turns a pair by an angle linear in the position).
void rotate_keys(const HParams& hp, const float* freq_factors, ThreadPool& pool, int l, float* k, int32_t n,
                 const int32_t* delta);

// The frontier R = the most entries any head holds, at most max_frontier. Head g of layer l, holding n
// entries, gets the positions R − n .. R − 1, its keys rotated to them; a head holding more than R (Ada gives
// some heads far more than others) has its oldest entries share position 0, as if at the context's far end.
// freq_factors: the model's [rope_dim/2] divisors (host) or null. Returns R, the position the next token takes.
int32_t rebase_positions(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool,
                         int32_t max_frontier);

// What each head of each layer keeps of its entries whose position lies in a span: [layer][head] ascending
// indices among those entries, in their stored order.
using SpanKeep = std::vector<std::vector<std::vector<int32_t>>>;

// Keeps, of the entries whose position is in [from, to), those `keep` names. Head g's n_g kept entries take
// the positions from + R − n_g .. from + R − 1 in their order (right-aligned, as rebase_positions does), R the
// most any head of any layer keeps, and the entries after the span move back by to − from − R, their keys
// rotated to the new positions; the entries before `from` (the document) stay as they are. Returns R.
int32_t squeeze_span(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool, int32_t from,
                     int32_t to, const SpanKeep& keep);

// Drops every entry whose position is in [from, to) and moves the entries after them back by to − from, their
// keys rotated to the new positions: the conversation's oldest turns forgotten (squeeze_span keeping nothing).
void forget_positions(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool,
                      int32_t from, int32_t to);

// Keeps every entry whose position is in [from, to) on contiguous positions (squeeze_span keeping all): the
// span then takes as many positions as its fullest head holds. Returns that count.
int32_t pack_span(backend::KvStore& kv, const HParams& hp, const float* freq_factors, ThreadPool& pool, int32_t from,
                  int32_t to);

// The entries of the span [from, to) to keep by their scores (docs/compression.md, "The conversation"): in each
// layer its heads compete for ceil(keep_ratio · the span's entries over the heads) slots, no head more than
// ceil(keep_ratio · (to − from)), the positions the span keeps (kv::capped_top). scores: [layer][head][entry],
// a score for each of the head's first entries (at least those up to the span's end).
SpanKeep top_of_span(const backend::KvStore& kv, int32_t from, int32_t to, double keep_ratio,
                     const std::vector<std::vector<std::vector<float>>>& scores);

}  // namespace folio::forward
