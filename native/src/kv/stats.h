// What a compression did (docs/compression.md, "Statistics"): these numbers drive the inspector.
//
// The field tables below are the one definition of the statistics' shape outside C++: each row is
// (the name in the app's contract, its kind, how to read it from `s`, the struct). They drive the
// binding's marshalling (napi/kv-schema.cc) and the schema the engine reports (statsSchema()), which
// test/kv-schema.test.ts holds equal to electron/shared/kv/stats.ts. A new statistic is a struct member and a row.
// Kinds: integer, number, boolean, string; numberOrNull, stringOrNull; int32Array (a typed array);
// layers, heads (arrays of the tables below).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kv/method.h"

namespace folio::kv {

struct HeadStats {
  int32_t kept = 0;          // entries kept, the window included
  double retained_mass = 1;  // Σ_kept Ā / Σ_all Ā, Ā = the window's mean attention (before pooling)
  double concentration = 1;  // fraction of the prefix tokens that hold 90% of the head's Ā
};

struct LayerStats {
  int32_t budget = 0;          // per-head budget B_l of this layer (window included); a sliding layer's min(L, n_swa)
  int32_t sliding_window = 0;  // n_swa of a sliding-window layer, kept by its window and not scored; 0: global
  size_t bytes_full = 0;       // K + V bytes of the whole prefix in this layer
  size_t bytes_kept = 0;       // K + V bytes of the kept entries
  double eps_over_c = 0;       // the paper's normalised bound: 2 · (Hk − Σ_h retained_mass_h)
  double attn_l1 = -1;         // L1 change of the window queries' attention output; -1 when not measured
  double ms_score = 0, ms_select = 0, ms_compact = 0;
  std::vector<HeadStats> heads;
};

struct CompressionStats {
  std::string method;
  int32_t prefix_tokens = 0;  // L
  int32_t window = 0;
  int32_t kernel = 0;
  double alpha = 0;
  Budget budget;  // the resolved per-head budget
  std::string kv_type;
  std::vector<LayerStats> layers;
  std::vector<int32_t> token_retention;  // [L]: how many (layer, head) slots kept each prefix token
  size_t kv_bytes_full = 0;
  size_t kv_bytes_kept = 0;
  double ms_prefill = 0;   // the whole prefill, compression included
  double ms_compress = 0;  // scoring, selection and compaction summed over layers
  // How the document was read: in one pass (chunks = 1) or in chunks, each compressed back to the budget.
  int32_t chunks = 1;
  int32_t chunk_tokens = 0;   // tokens per chunk (the last may be longer by less than the window)
  size_t kv_bytes_peak = 0;   // the most the cache reserved at any moment of the read
  size_t kv_bytes_bound = 0;  // what a chunked read promised not to exceed (0 for one pass)
  int32_t positions = 0;      // positions the document takes in the context (L unless re-based)
  bool rebased = false;       // the kept entries were given contiguous positions (beyond the context)
};

// X(name, kind, expression of s) for s a HeadStats.
#define FOLIO_HEAD_STATS_FIELDS(X)           \
  X("kept", integer, s.kept)                 \
  X("retainedMass", number, s.retained_mass) \
  X("concentration", number, s.concentration)

// For s a LayerStats.
#define FOLIO_LAYER_STATS_FIELDS(X)                                              \
  X("budget", integer, s.budget)                                                 \
  X("slidingWindow", integer, s.sliding_window)                                  \
  X("bytesFull", integer, s.bytes_full)                                          \
  X("bytesKept", integer, s.bytes_kept)                                          \
  X("epsOverC", number, s.eps_over_c)                                            \
  X("attnL1", numberOrNull, s.attn_l1 < 0 ? std::optional<double>() : s.attn_l1) \
  X("msScore", number, s.ms_score)                                               \
  X("msSelect", number, s.ms_select)                                             \
  X("msCompact", number, s.ms_compact)                                           \
  X("heads", heads, s.heads)

// For s a CompressionStats; the resolved budget is spread into compressed, reason (null when
// compressed), budget (B), budgetSelectable (b) and budgetClamped.
#define FOLIO_COMPRESSION_STATS_FIELDS(X)                                                       \
  X("method", string, s.method)                                                                 \
  X("prefixTokens", integer, s.prefix_tokens)                                                   \
  X("window", integer, s.window)                                                                \
  X("kernel", integer, s.kernel)                                                                \
  X("alpha", number, s.alpha)                                                                   \
  X("kvType", string, s.kv_type)                                                                \
  X("compressed", boolean, s.budget.compress)                                                   \
  X("reason", stringOrNull, s.budget.compress ? std::optional<std::string>() : s.budget.reason) \
  X("budget", integer, s.budget.B)                                                              \
  X("budgetSelectable", integer, s.budget.b)                                                    \
  X("budgetClamped", boolean, s.budget.clamped)                                                 \
  X("kvBytesFull", integer, s.kv_bytes_full)                                                    \
  X("kvBytesKept", integer, s.kv_bytes_kept)                                                    \
  X("msPrefill", number, s.ms_prefill)                                                          \
  X("msCompress", number, s.ms_compress)                                                        \
  X("chunks", integer, s.chunks)                                                                \
  X("chunkTokens", integer, s.chunk_tokens)                                                     \
  X("kvBytesPeak", integer, s.kv_bytes_peak)                                                    \
  X("kvBytesBound", integer, s.kv_bytes_bound)                                                  \
  X("positions", integer, s.positions)                                                          \
  X("rebased", boolean, s.rebased)                                                              \
  X("layers", layers, s.layers)                                                                 \
  X("tokenRetention", int32Array, s.token_retention)

}  // namespace folio::kv
