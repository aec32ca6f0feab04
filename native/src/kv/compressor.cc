#include "kv/compressor.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "kv/allocator.h"
#include "kv/schedule.h"

namespace folio::kv {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Fraction of the tokens that hold 90% of a head's attention mass.
double concentration(const std::vector<float>& attn) {
  std::vector<float> a(attn);
  std::sort(a.begin(), a.end(), std::greater<float>());
  const double total = std::accumulate(a.begin(), a.end(), 0.0);
  double cum = 0;
  size_t k = 0;
  while (k < a.size() && cum < 0.9 * total) cum += a[k++];
  return a.empty() ? 1.0 : double(std::max<size_t>(k, 1)) / double(a.size());
}

}  // namespace

Compressor::Compressor(const CompressOptions& opts, const WindowShape& shape, int n_layers, size_t k_entry_bytes,
                       size_t v_entry_bytes, const std::string& kv_type)
    : opts_(opts), shape_(shape) {
  shape_.w = std::min(opts.window, shape.L);
  qw_.resize(size_t(shape_.w) * size_t(shape.n_head) * size_t(shape.head_dim));
  stats_.method = opts.method.name;
  stats_.prefix_tokens = shape.L;
  stats_.window = opts.window;
  stats_.kernel = opts.kernel;
  stats_.alpha = opts.alpha;
  stats_.kv_type = kv_type;
  stats_.budget = resolve_budget(opts, shape.L);
  const Budget& B = stats_.budget;
  if (B.compress && opts.method.selection == Selection::Scored)
    layer_b_ = opts.method.schedule == Schedule::Pyramid
                   ? pyramid_schedule(B.b, shape.L - opts.window, n_layers, opts.beta)
                   : flat_schedule(B.b, n_layers);
  stats_.layers.resize(size_t(n_layers));
  stats_.token_retention.assign(size_t(shape.L), 0);
  for (auto& ls : stats_.layers)
    ls.bytes_full = size_t(shape.L) * size_t(shape.n_head_kv) * (k_entry_bytes + v_entry_bytes);
}

std::vector<std::vector<int32_t>> Compressor::select(int l, const WindowScores& ws) const {
  const int Hk = shape_.n_head_kv;
  const int32_t L = shape_.L, w = shape_.w;
  const Budget& B = stats_.budget;
  std::vector<std::vector<int32_t>> keep(static_cast<size_t>(Hk));
  if (!B.compress) {
    for (auto& k : keep) k.resize(size_t(L)), std::iota(k.begin(), k.end(), 0);
    return keep;
  }
  if (opts_.method.selection == Selection::Streaming) {
    // The first `sinks` tokens and the most recent B − sinks.
    const int32_t sinks = std::min(opts_.sinks, B.B);
    std::vector<int32_t> idx;
    for (int32_t j = 0; j < sinks; j++) idx.push_back(j);
    for (int32_t j = std::max(sinks, L - (B.B - sinks)); j < L; j++) idx.push_back(j);
    std::fill(keep.begin(), keep.end(), idx);
    return keep;
  }
  const int32_t b = layer_b_[size_t(l)];
  const std::vector<int32_t> caps =
      opts_.method.allocator == Allocator::Ada ? ada_caps(ws.score, b, opts_.alpha) : uniform_caps(Hk, b);
  for (int g = 0; g < Hk; g++) {
    keep[size_t(g)] = top_tokens(ws.score[size_t(g)], caps[size_t(g)]);
    for (int32_t j = L - w; j < L; j++) keep[size_t(g)].push_back(j);  // the window is always kept
  }
  return keep;
}

std::vector<std::vector<int32_t>> Compressor::plan_layer(ThreadPool& pool, int l, const WindowScores& ws,
                                                         double ms_score, size_t entry_bytes, const EntryReader& keys,
                                                         const EntryReader& values) {
  LayerStats& ls = stats_.layers[size_t(l)];
  const int Hk = shape_.n_head_kv;
  const int32_t L = shape_.L;
  ls.ms_score = ms_score;

  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<int32_t>> keep = select(l, ws);
  ls.ms_select = ms_since(t0);

  ls.budget = stats_.budget.compress && opts_.method.selection == Selection::Scored ? layer_b_[size_t(l)] + shape_.w
                                                                                    : stats_.budget.B;
  ls.heads.resize(size_t(Hk));
  double mass_sum = 0;
  std::vector<std::vector<uint8_t>> mask(size_t(Hk), std::vector<uint8_t>(size_t(L), 0));
  for (int g = 0; g < Hk; g++) {
    HeadStats& hs = ls.heads[size_t(g)];
    const std::vector<float>& a = ws.attn[size_t(g)];
    double kept = 0, total = 0;
    for (int32_t j : keep[size_t(g)]) mask[size_t(g)][size_t(j)] = 1, kept += a[size_t(j)];
    for (float x : a) total += x;
    hs.kept = int32_t(keep[size_t(g)].size());
    hs.retained_mass = total > 0 ? kept / total : 1.0;
    hs.concentration = concentration(a);
    mass_sum += hs.retained_mass;
    for (int32_t j : keep[size_t(g)]) stats_.token_retention[size_t(j)]++;
    ls.bytes_kept += size_t(hs.kept) * entry_bytes;
  }
  ls.eps_over_c = 2.0 * (double(Hk) - mass_sum);
  if (opts_.measure_loss) ls.attn_l1 = attention_l1_loss(pool, shape_, qw_.data(), keys, values, mask);
  return keep;
}

void Compressor::add_compact_time(int l, double ms_compact) {
  LayerStats& ls = stats_.layers[size_t(l)];
  ls.ms_compact = ms_compact;
  stats_.kv_bytes_full += ls.bytes_full;
  stats_.kv_bytes_kept += ls.bytes_kept;
  stats_.ms_compress += ls.ms_score + ls.ms_select + ls.ms_compact;
}

}  // namespace folio::kv
