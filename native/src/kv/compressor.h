// Compression during prefill, one layer at a time: right after a layer has been prefilled, its entries
// are scored (on the backend that holds the cache), then this class allocates and selects what each head
// keeps and records the statistics, and the layer is compacted, so the peak holds one layer's full cache
// rather than the model's. The driver that runs these steps over a backend is forward/compress-layer.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/thread-pool.h"
#include "kv/method.h"
#include "kv/scorer.h"
#include "kv/stats.h"

namespace folio::kv {

class Compressor {
 public:
  // L: prefix tokens, all of them in the cache (which was empty before this prefill).
  Compressor(const CompressOptions& opts, const WindowShape& shape, int n_layers, size_t k_entry_bytes,
             size_t v_entry_bytes, const std::string& kv_type);

  int32_t window() const { return shape_.w; }         // w: window queries, the last w prefix tokens
  int32_t prefix_tokens() const { return shape_.L; }  // L: prefix tokens, all of them in the cache
  const WindowShape& shape() const { return shape_; }
  // The host copy of the current layer's window queries, [w, H · head_dim]: the driver fills it before
  // plan_layer (the attention-loss measurement reads it).
  float* window_queries() { return qw_.data(); }
  // Given layer l's window scores (and how long they took), chooses what each head keeps ([Hk] ascending
  // indices) and records the statistics; keys/values read the layer's first L entries (only for the
  // attention-loss measurement). The caller compacts (when budget().compress) and reports the time with
  // add_compact_time.
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
