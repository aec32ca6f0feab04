// The SnapKV observation-window scorer (docs/compression.md, "Scoring"): the last w prefix tokens' queries attend
// to all L prefix keys (causal only inside the window), softmax in fp32 over all L keys, mean over the
// w queries, mean over each KV head's G query heads, then max-pooling over the key axis.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/thread-pool.h"

namespace folio::kv {

// Reads keys (or values) [0, L) of KV head g as floats into out [L, dim].
using EntryReader = std::function<void(int g, float* out)>;

struct WindowShape {
  int n_head = 0;     // query heads H
  int n_head_kv = 0;  // KV heads Hk; a query head h reads KV head h / (H / Hk)
  int head_dim = 0;
  int head_dim_v = 0;
  int32_t L = 0;  // prefix tokens (keys)
  int32_t w = 0;  // window queries: the last w of the L tokens
};

struct WindowScores {
  std::vector<std::vector<float>> attn;   // [Hk][L]: Ā, window-mean attention averaged over the G heads
  std::vector<std::vector<float>> score;  // [Hk][L − w]: Ā of the prefix tokens, max-pooled
};

// qw: [w, H · head_dim] the window queries, post-RoPE, in the projections' layout.
WindowScores snapkv_scores(ThreadPool& pool, const WindowShape& s, const float* qw, const EntryReader& keys,
                           int kernel);

// Max-pooling along one row: out[j] = max of x over [j − k/2, j + k/2] ∩ [0, n) (stride 1, -inf padding).
std::vector<float> max_pool(const std::vector<float>& x, int kernel);

// The actual L1 change of the window queries' attention output when each KV head g keeps only the
// entries with keep[g][j] != 0 (the paper's Figure 2): mean over query heads and window queries of
// ‖Σ_j p_j v_j − Σ_kept p_j v_j / Σ_kept p_j‖₁.
double attention_l1_loss(ThreadPool& pool, const WindowShape& s, const float* qw, const EntryReader& keys,
                         const EntryReader& values, const std::vector<std::vector<uint8_t>>& keep);

}  // namespace folio::kv
