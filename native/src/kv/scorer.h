// The SnapKV observation-window scorer (docs/compression.md, "Scoring"): the last w prefix tokens' queries attend
// to all L prefix keys (causal only inside the window), softmax in fp32 over all L keys, mean over the
// w queries, mean over each KV head's G query heads, then max-pooling over the key axis. While a long
// document is read in chunks the heads hold different numbers of entries (what each kept, then the chunk):
// head g then has its own L_g, and its window is still its last w entries (the chunk's last w tokens).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/thread-pool.h"

namespace folio::kv {

// Reads keys (or values) [0, L_g) of KV head g as floats into out [L_g, dim].
using EntryReader = std::function<void(int g, float* out)>;

struct WindowShape {
  int n_head = 0;     // query heads H
  int n_head_kv = 0;  // KV heads Hk; a query head h reads KV head h / (H / Hk)
  int head_dim = 0;
  int head_dim_v = 0;
  int32_t L = 0;  // prefix tokens (keys)
  int32_t w = 0;  // window queries: the last w of the L tokens
  // Entries of each KV head when they differ ([Hk]; empty: every head holds L).
  std::vector<int32_t> lens;

  int32_t len(int g) const { return lens.empty() ? L : lens[size_t(g)]; }
  int32_t max_len() const;
};

struct WindowScores {
  std::vector<std::vector<float>> attn;   // [Hk][L_g]: Ā, window-mean attention averaged over the G heads
  std::vector<std::vector<float>> score;  // [Hk][L_g − w]: Ā of the prefix tokens, max-pooled
};

// qw: [w, H · head_dim] the window queries, post-RoPE, in the projections' layout.
WindowScores snapkv_scores(ThreadPool& pool, const WindowShape& s, const float* qw, const EntryReader& keys,
                           int kernel);

// Keys [0, L_g) of KV head g, transposed: Kt [head_dim, L_g], as window_probs reads them.
std::vector<float> transposed_keys(const WindowShape& s, const EntryReader& keys, int g);

// Softmax probabilities of window query i (entry L_g − w + i) of query head h over the keys of its KV head g,
// transposed (Kt [D, L_g]): p [L_g], zero past the causal limit.
void window_probs(const WindowShape& s, const float* qw, int h, int i, const float* Kt, float* p);

// Max-pooling along one row: out[j] = max of x over [j − k/2, j + k/2] ∩ [0, n) (stride 1, -inf padding).
std::vector<float> max_pool(const std::vector<float>& x, int kernel);

// The actual L1 change of the window queries' attention output when each KV head g keeps only the
// entries with keep[g][j] != 0 (the paper's Figure 2): mean over query heads and window queries of
// ‖Σ_j p_j v_j − Σ_kept p_j v_j / Σ_kept p_j‖₁.
double attention_l1_loss(ThreadPool& pool, const WindowShape& s, const float* qw, const EntryReader& keys,
                         const EntryReader& values, const std::vector<std::vector<uint8_t>>& keep);

}  // namespace folio::kv
