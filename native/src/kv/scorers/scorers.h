// The scorer contract (docs/compression.md, "Scorers"): a scorer ranks the selectable entries of one layer's
// KV heads, everything but each head's last w (the window, always kept); the allocator and the layer schedule
// then decide how many each head keeps and the best-ranked stay. A scorer is one function over a LayerView
// and one row of scorer_table(); what it needs beyond the window (the value projections, the prefix's query
// statistics, a re-reading of the document) it says in its row, and the driver supplies only that.
#pragma once
#include <cstdint>
#include <vector>

#include "core/thread-pool.h"
#include "kv/method.h"
#include "kv/scorer.h"

namespace folio::kv {

// The rotary embedding as a scorer needs it: the angle of pair i at position p is p · inv_freq[i]; a pair is
// dims (2i, 2i+1), or (i, i + rope_dim/2) when neox.
struct RopeAngles {
  std::vector<float> inv_freq;  // [rope_dim/2]
  bool neox = false;
};

// Running sums of the prefix's queries before RoPE, per query head, over the tokens read so far (the first
// kSinks left out, as ExpectedAttention does): count, Σq [H, D] and Σq·qᵀ [H, D, D].
struct QueryStats {
  static constexpr int32_t kSinks = 4;
  double count = 0;
  std::vector<double> sum, outer;
  void add(const float* q, int64_t m, int32_t first_token, int n_head, int head_dim);
};

// What a scorer may read of layer l while it is compressed.
struct LayerView {
  const WindowShape& shape;    // the heads' lengths L_g; the window w
  const WindowScores& window;  // SnapKV's window attention (the backend computes it where the cache is)
  const float* qw;             // [w, H · head_dim] the window queries, post-RoPE
  const EntryReader& keys;     // head g's entries [0, L_g) as floats: keys [L_g, head_dim]
  const EntryReader& values;   // values [L_g, head_dim_v]
  int32_t b;                   // the layer's selectable budget per head (before allocation)
  // Given when the scorer's row asks for them:
  const float* value_gram = nullptr;  // [H, Dv, Dv] W_oᵀ W_o of each query head's slice of the output projection
  const QueryStats* queries = nullptr;
  const RopeAngles* rope = nullptr;
  int32_t next_pos = 0;                                   // the position the next token will take
  const std::vector<std::vector<float>>* seen = nullptr;  // [Hk][L_g] kvzip: the largest re-reading attention
};

struct EntryScores {
  std::vector<std::vector<float>> score;  // [Hk][L_g − w]
  // A first stage (CriticalKV's): when given, the allocator decides by these, and half of each head's cap goes
  // to its best entries by these before `score` ranks the rest.
  std::vector<std::vector<float>> first;
};

using ScoreFn = EntryScores (*)(ThreadPool& pool, const LayerView& v);

struct ScorerRow {
  Scorer id;
  const char* name;   // in method names: "snapkv", "critical", ...
  const char* label;  // for people: "SnapKV", ...
  const char* ranks;  // what it ranks by, a phrase for the method's one-line description
  ScoreFn score;      // null: the window's own max-pooled scores (SnapKV)
  bool value_gram;    // needs LayerView::value_gram
  bool query_stats;   // needs LayerView::queries and rope
  bool rereads;       // needs the document re-read (kvzip): LayerView::seen
};

// Every scorer, in the order method names are listed.
const std::vector<ScorerRow>& scorer_table();
const ScorerRow& scorer_row(Scorer s);

// The scorers (one file each in kv/scorers/).
EntryScores critical_scores(ThreadPool& pool, const LayerView& v);
EntryScores defensive_scores(ThreadPool& pool, const LayerView& v);
EntryScores expected_scores(ThreadPool& pool, const LayerView& v);
EntryScores kvzip_scores(ThreadPool& pool, const LayerView& v);

// Helpers the scorers share.
// ‖W_o^(h) v‖₂ of each entry of KV head g averaged over its query group: out [L_g] (CriticalKV's projected value
// norm, L2 through the Gram matrix rather than the paper's L1: kvpress issue #45 found the two equal).
std::vector<float> projected_value_norms(const LayerView& v, int g, const float* V);

}  // namespace folio::kv
