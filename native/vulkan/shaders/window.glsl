// What the three window-score kernels share (ws_stats, ws_attn, ws_pool .comp). Needs common.glsl,
// dequant.glsl, kv.glsl.
// Row r (0 ≤ r < R = G·w) of KV head g is query head g·G + r / w at window query i = r % w, which sees keys
// [0, L − w + i]. Its score with key j: q·k in index order with separately rounded products (`precise`),
// times 1/sqrt(D), as kv/scorer.cc's window_probs computes it on a CPU without FMA.
float window_dot(Floats qw, uint64_t krow, int k_type, int qbase, int D, float scale) {
  precise float dot = 0.0;
  for (int d = 0; d < D; d++) {
    precise float prod = qw.v[qbase + d] * kv_load(krow, k_type, D, d);
    dot += prod;
  }
  return dot * scale;
}
