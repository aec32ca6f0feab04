// Compression during prefill, one layer at a time: right after a layer has been prefilled, score its
// entries, allocate and select what each head keeps, compact the layer and free the rest, so the peak
// holds one layer's full cache rather than the model's.
#pragma once
#include <cstdint>
#include <vector>

#include "core/thread-pool.h"
#include "kv/flat-cache.h"
#include "kv/method.h"
#include "kv/scorer.h"
#include "kv/stats.h"

namespace folio::kv {

class Compressor {
 public:
  // L: prefix tokens, all of them in the cache (which was empty before this prefill).
  Compressor(const CompressOptions& opts, const WindowShape& shape, int n_layers, size_t k_entry_bytes,
             size_t v_entry_bytes, const std::string& kv_type);

  int32_t window() const { return shape_.w; }
  int32_t prefix_tokens() const { return shape_.L; }  // how many of the last prefix tokens' queries to keep
  // Where the forward pass writes the window queries of the current layer: [w, H · head_dim].
  float* window_queries() { return qw_.data(); }
  // Scores, selects and compacts layer l; `spare` free entries per head remain for the conversation.
  void compress_layer(ThreadPool& pool, FlatKvCache& cache, int l, int32_t spare);
  // The same in steps, for a cache that lives elsewhere (a GPU): given layer l's window scores (and how
  // long they took), chooses what each head keeps ([Hk] ascending indices) and records the statistics;
  // keys/values read the layer's first L entries (only for the attention-loss measurement). The caller
  // compacts (when budget().compress) and reports the time with add_compact_time.
  std::vector<std::vector<int32_t>> plan_layer(ThreadPool& pool, int l, const WindowScores& ws, double ms_score,
                                               size_t entry_bytes, const EntryReader& keys, const EntryReader& values);
  void add_compact_time(int l, double ms_compact);
  const Budget& budget() const { return stats_.budget; }
  const CompressOptions& options() const { return opts_; }
  CompressionStats& stats() { return stats_; }

 private:
  std::vector<std::vector<int32_t>> select(int l, const WindowScores& ws) const;

  CompressOptions opts_;
  WindowShape shape_;
  std::vector<float> qw_;
  std::vector<int32_t> layer_b_;  // selectable budget b_l per layer
  CompressionStats stats_;
};

}  // namespace folio::kv
