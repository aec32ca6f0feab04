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

  int32_t window() const { return shape_.w; }  // how many of the last prefix tokens' queries to keep
  // Where the forward pass writes the window queries of the current layer: [w, H · head_dim].
  float* window_queries() { return qw_.data(); }
  // Scores, selects and compacts layer l; `spare` free entries per head remain for the conversation.
  void compress_layer(ThreadPool& pool, FlatKvCache& cache, int l, int32_t spare);
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
