// Compression during prefill, one layer at a time: right after a layer has read the prefix (or, for a long
// document read in chunks, the next chunk), its entries are scored (on the backend that holds the cache),
// then this class allocates and selects what each head keeps and records the statistics, and the layer is
// compacted. A one-shot read is one step per layer over the whole prefix; a chunked read is one step per
// layer and chunk, each bringing the layer back to its budget, so the cache never holds more than the
// budget plus one chunk. The driver that runs these steps over a backend is forward/compress-layer.h.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/thread-pool.h"
#include "kv/method.h"
#include "kv/scorer.h"
#include "kv/scorers/scorers.h"
#include "kv/stats.h"

namespace folio::kv {

// The chunks a prefix of L tokens is read in: their first tokens, then L ([0, L] for one pass, chunk = 0 or
// chunk >= L). Every chunk holds at least the window w (a short tail joins the chunk before it).
std::vector<int32_t> chunk_starts(int32_t L, int32_t chunk, int32_t w);
// The chunk size the engine chooses for a budget of B tokens per head in a context of n_ctx positions: about
// the budget, so that the cache holds at most about twice it, within 512 to 1024 tokens (a chunk's queries
// attend over half of it on average; larger chunks read no faster: docs/benchmarks-log.md), and at most a
// quarter of the positions (a re-based read needs room for the kept entries, a chunk and the conversation).
int32_t default_chunk(int32_t B, int32_t n_ctx);

// [layer][head][entry]: the score each kept entry had when the read last chose what to keep (the method's
// ranking, its first stage for two), +infinity where an entry was kept without one (the window, a sliding layer,
// a method that does not score): what a set's one budget re-selects by (keep_over_set). A head may hold more
// entries than its row has scores: those it holds after have none.
using KeptScores = std::vector<std::vector<std::vector<float>>>;

class Compressor {
 public:
  // shape.L: the prefix's tokens, the whole document however it is read (the budget, the layer schedule
  // and the statistics are about it); the cache was empty before it.
  Compressor(const CompressOptions& opts, const WindowShape& shape, int n_layers, size_t k_entry_bytes,
             size_t v_entry_bytes, const std::string& kv_type);

  int32_t window() const { return shape_.w; }         // w: window queries, the last w tokens read
  int32_t prefix_tokens() const { return shape_.L; }  // L: prefix tokens
  const WindowShape& shape() const { return shape_; }
  // The scorer's row (kv/scorers/scorers.h); null when nothing is ranked (full, streaming) or nothing is cut.
  const ScorerRow* scorer() const { return scorer_; }
  // Whether the layers are cut together once the chunk has passed every layer (and been re-read, for kvzip)
  // rather than each right after it is scored: the global schedule ranks all layers at once.
  bool deferred() const { return deferred_; }
  // What the scorer needs from the driver: each layer's W_oᵀW_o per query head ([H, Dv, Dv]), the RoPE.
  void set_value_gram(int l, std::vector<float> gram) { value_gram_[size_t(l)] = std::move(gram); }
  // Per layer (gemma3's sliding layers rotate by a base of their own).
  void set_rope(std::vector<RopeAngles> per_layer) { rope_ = std::move(per_layer); }
  // Each layer's sliding window (HParams::layer_window; 0: a global layer). A sliding layer's cache is its
  // window already: it is not scored, and a compression keeps each head's newest min(len, n_swa) entries,
  // all that a later query can see (docs/compression.md, "Models with sliding-window layers").
  void set_windows(std::vector<int32_t> per_layer);
  int32_t layer_window(int l) const { return windows_.empty() ? 0 : windows_[size_t(l)]; }
  // Layer l slides and the prefix is compressed: the driver skips its window scores and hands its lengths to
  // keep_window_layer instead of score_layer. (Uncompressed, every layer keeps all and is measured alike.)
  bool slides(int l) const { return layer_window(l) > 0 && stats_.budget.compress; }
  void keep_window_layer(int l, const std::vector<int32_t>& lens);
  // The next tokens read are the document's [first, first + n), at positions pos0 ..: every head of every
  // layer gets n entries.
  void begin_chunk(int32_t first, int32_t n, int32_t pos0);
  int32_t chunk_first() const { return chunk_first_; }
  // Free entries per head a compaction leaves: room for the next chunk while reading, else `after`.
  void set_room(int32_t next_chunk) { room_ = next_chunk; }
  int32_t room(int32_t after) const { return room_ > 0 ? room_ : after; }
  // The host copy of the current layer's window queries, [w, H · head_dim]: the driver fills it before
  // score_layer.
  float* window_queries() { return qw_.data(); }
  // The prefix's queries of layer l before RoPE, [m, H · head_dim], document tokens first .. first + m − 1
  // (only when the scorer asks for query statistics).
  void add_queries(int l, const float* q, int64_t m, int32_t first);
  // kvzip: the largest attention each entry has had while the chunks are re-read ([layer][Hk][entries], in step
  // with the cache; the entries the re-reading appends are not in it): the forward pass's watch.
  std::vector<std::vector<std::vector<float>>>& seen() { return seen_; }
  std::vector<std::vector<float>>& seen(int l) { return seen_[size_t(l)]; }
  // Layer l's window scores as its heads are now (head g holds lens[g] entries, the last w the window) and
  // how long they took; ranks the entries with the method's scorer (keys/values read a head's entries).
  void score_layer(ThreadPool& pool, int l, const std::vector<int32_t>& lens, const WindowScores& ws, double ms_score,
                   const EntryReader& keys, const EntryReader& values);
  // Ranks layer l's entries with the method's scorer; score_layer does it, but for a scorer that re-reads the
  // document (kvzip), the driver does once the re-reading is over (keys/values as for score_layer).
  void rank_layer(ThreadPool& pool, int l, const EntryReader& keys, const EntryReader& values);
  // What each head of layer l keeps ([Hk] ascending entry indices), from its last scores, and the statistics;
  // the global schedule plans once every layer is scored. The caller compacts when compacts() and reports
  // the time with add_compact_time.
  std::vector<std::vector<int32_t>> plan_layer(ThreadPool& pool, int l, const EntryReader& keys,
                                               const EntryReader& values);
  // Whether the last plan_layer of layer l dropped anything.
  bool compacts(int l) const { return compacts_[size_t(l)] != 0; }
  void add_compact_time(int l, double ms_compact);
  // The cache's reserved bytes at a moment of the read (the peak is kept in the statistics).
  void note_reserved(size_t bytes) { stats_.kv_bytes_peak = std::max(stats_.kv_bytes_peak, bytes); }
  // The most a chunked read may reserve, chunks of at most `chunk` tokens (and a re-reading of `reread` more):
  // every layer's heads at their budget plus one chunk, keys, values and positions; 0 when nothing is
  // compressed (no bound).
  size_t chunked_bound(int32_t chunk, int32_t reread = 0) const;
  // Closes the statistics once every token has been read: what each head holds, per-token retention.
  void finish();
  // The kept entries' scores (KeptScores), in step with the cache after the read; moved out.
  KeptScores take_kept_scores() { return std::move(kept_scores_); }
  // What a chunked read carries from one chunk to the next (the tokens each entry came from, the sums of
  // the statistics, the scorer's running state), as bytes for a checkpoint, and back into a compressor made
  // with the same options and shape (INTERNAL when the bytes do not fit it).
  std::string save_state() const;
  void load_state(const std::string& bytes);
  const Budget& budget() const { return stats_.budget; }
  const CompressOptions& options() const { return opts_; }
  CompressionStats& stats() { return stats_; }

 private:
  // Layer l as last scored, until it is planned.
  struct Scored {
    std::vector<int32_t> lens;
    WindowScores window;  // attn: the window's mean attention (statistics); score: SnapKV's ranks
    EntryScores scores;
    std::vector<float> qw;  // the window queries (the attention-loss measurement)
  };
  std::vector<std::vector<int32_t>> select(int l, const Scored& sc) const;
  // Keeps source_ (and seen_) of head g of layer l in step with a compaction that keeps entries idx.
  void keep_sources(int l, int g, const std::vector<int32_t>& idx);
  // The global schedule: every layer's budget for this chunk from one ranking of all layers' scores.
  void assign_global_budgets();

  CompressOptions opts_;
  WindowShape shape_;
  const ScorerRow* scorer_ = nullptr;
  bool deferred_ = false;
  std::vector<float> qw_;
  // This chunk's share of a selectable budget b (b itself in one pass and at the last chunk): at a ratio the
  // budget grows with the read, b·(tokens read)/L, so that a chunk attends over r·(what was read) entries, not
  // over r·L from the start; a budget in tokens per head is a cap from the first chunk (docs/compression.md).
  int32_t grown(int32_t b) const;

  std::vector<int32_t> layer_b_;  // selectable budget b_l per layer for the whole document (flat or pyramid)
  std::vector<int32_t> chunk_b_;  // this chunk's: layer_b_ grown, or the global schedule's
  bool global_ready_ = false;     // chunk_b_ holds this chunk's global budgets
  int32_t read_end_ = 0;          // the document's tokens read once this chunk is in
  size_t entry_bytes_ = 0;        // K + V bytes of one entry
  int32_t room_ = 0;
  int32_t chunk_first_ = 0, next_pos_ = 0;
  std::vector<RopeAngles> rope_;                // [layer], or empty
  std::vector<int32_t> windows_;                // [layer] sliding windows (0: global), or empty
  std::vector<std::vector<float>> value_gram_;  // [layer] [H, Dv, Dv]
  std::vector<QueryStats> queries_;             // [layer]
  std::vector<Scored> scored_;                  // [layer]
  // [layer][head][entry]: the document token each cached entry came from, kept in step with the cache; for
  // kvzip also the largest re-reading attention of each.
  std::vector<std::vector<std::vector<int32_t>>> source_;
  std::vector<std::vector<std::vector<float>>> seen_;
  KeptScores kept_scores_;         // set by every plan, so the last one's stands
  std::vector<uint8_t> compacts_;  // [layer]
  // [layer][head] sums over the steps of a layer, averaged by finish(); attention loss: sum and count.
  std::vector<std::vector<double>> mass_sum_, conc_sum_;
  std::vector<int32_t> steps_, l1_steps_;
  std::vector<double> l1_sum_;
  CompressionStats stats_;
};

}  // namespace folio::kv
