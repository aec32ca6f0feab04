#include "kv/compressor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/error.h"
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

std::vector<int32_t> chunk_starts(int32_t L, int32_t chunk, int32_t w) {
  std::vector<int32_t> s = {0};
  if (chunk > 0 && chunk < L) {
    chunk = std::max(chunk, w);
    for (int32_t t = chunk; t < L; t += chunk)
      if (L - t >= w) s.push_back(t);
  }
  s.push_back(L);
  return s;
}

int32_t default_chunk(int32_t B, int32_t n_ctx) { return std::min(std::clamp(B, 512, 1024), std::max(n_ctx / 4, 1)); }

Compressor::Compressor(const CompressOptions& opts, const WindowShape& shape, int n_layers, size_t k_entry_bytes,
                       size_t v_entry_bytes, const std::string& kv_type)
    : opts_(opts), shape_(shape), entry_bytes_(k_entry_bytes + v_entry_bytes) {
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
  const size_t Hk = size_t(shape.n_head_kv), layers = size_t(n_layers);
  if (B.compress && opts.method.selection == Selection::Scored) {
    layer_b_ = opts.method.schedule == Schedule::Pyramid
                   ? pyramid_schedule(B.b, shape.L - opts.window, n_layers, opts.beta)
                   : flat_schedule(B.b, n_layers);
    scorer_ = &scorer_row(opts.method.scorer);
    deferred_ = opts.method.schedule == Schedule::Global || scorer_->rereads;
  }
  stats_.layers.resize(layers);
  stats_.token_retention.assign(size_t(shape.L), 0);
  for (auto& ls : stats_.layers) ls.bytes_full = size_t(shape.L) * Hk * entry_bytes_;
  source_.assign(layers, std::vector<std::vector<int32_t>>(Hk));
  kept_scores_.assign(layers, std::vector<std::vector<float>>(Hk));
  if (scorer_ && scorer_->rereads) seen_.assign(layers, std::vector<std::vector<float>>(Hk));
  if (scorer_ && scorer_->query_stats) queries_.resize(layers);
  value_gram_.resize(layers);
  scored_.resize(layers);
  compacts_.assign(layers, 0);
  mass_sum_.assign(layers, std::vector<double>(Hk, 0.0));
  conc_sum_ = mass_sum_;
  steps_.assign(layers, 0);
  l1_steps_.assign(layers, 0);
  l1_sum_.assign(layers, 0.0);
}

void Compressor::set_windows(std::vector<int32_t> per_layer) {
  if (per_layer.size() != stats_.layers.size()) fail("INTERNAL", "a sliding window for every layer");
  windows_ = std::move(per_layer);
  for (size_t l = 0; l < windows_.size(); l++) stats_.layers[l].sliding_window = windows_[l];
  // The pyramid spreads the global layers' budgets over the global layers alone, by their depth among them:
  // whatever the schedule, the global layers keep Σ_l b_l = (global layers) · b.
  std::vector<int> globals;
  for (int l = 0; l < int(windows_.size()); l++)
    if (!slides(l)) globals.push_back(l);
  if (scorer_ && opts_.method.schedule == Schedule::Pyramid && !globals.empty() && globals.size() < windows_.size()) {
    const std::vector<int32_t> b =
        pyramid_schedule(stats_.budget.b, shape_.L - opts_.window, int(globals.size()), opts_.beta);
    for (size_t i = 0; i < globals.size(); i++) layer_b_[size_t(globals[i])] = b[i];
  }
}

void Compressor::keep_window_layer(int l, const std::vector<int32_t>& lens) {
  Scored& sc = scored_[size_t(l)];
  sc = Scored();
  sc.lens = lens;
}

void Compressor::begin_chunk(int32_t first, int32_t n, int32_t pos0) {
  chunk_first_ = first;
  next_pos_ = pos0 + n;
  global_ready_ = false;
  read_end_ = first + n;
  chunk_b_.resize(layer_b_.size());
  for (size_t l = 0; l < layer_b_.size(); l++) chunk_b_[l] = grown(layer_b_[l]);
  for (auto& layer : source_)
    for (auto& head : layer)
      for (int32_t t = first; t < first + n; t++) head.push_back(t);
  for (auto& layer : seen_)
    for (auto& head : layer) head.resize(head.size() + size_t(n), 0.0f);
}

int32_t Compressor::grown(int32_t b) const {
  if (opts_.budget_tokens > 0) return b;
  return int32_t((int64_t(b) * read_end_ + shape_.L - 1) / shape_.L);  // rounded up: never 0 for b > 0
}

void Compressor::add_queries(int l, const float* q, int64_t m, int32_t first) {
  queries_[size_t(l)].add(q, m, first, shape_.n_head, shape_.head_dim);
}

void Compressor::score_layer(ThreadPool& pool, int l, const std::vector<int32_t>& lens, const WindowScores& ws,
                             double ms_score, const EntryReader& keys, const EntryReader& values) {
  Scored& sc = scored_[size_t(l)];
  sc.lens = lens;
  sc.window = ws;
  sc.qw.assign(qw_.begin(), qw_.end());
  sc.scores = EntryScores();
  stats_.layers[size_t(l)].ms_score += ms_score;
  if (!scorer_ || !scorer_->rereads) rank_layer(pool, l, keys, values);  // kvzip ranks after the re-reading
}

namespace {
const RopeAngles kNoRope;  // no rotation known (set_rope not called): no pairs
}  // namespace

void Compressor::rank_layer(ThreadPool& pool, int l, const EntryReader& keys, const EntryReader& values) {
  if (slides(l)) return;  // kept by its window, not by scores
  Scored& sc = scored_[size_t(l)];
  const auto t0 = std::chrono::steady_clock::now();
  if (scorer_ && scorer_->score) {
    WindowShape s = shape_;
    s.lens = sc.lens;
    const LayerView view{s,
                         sc.window,
                         sc.qw.data(),
                         keys,
                         values,
                         chunk_b_[size_t(l)],
                         value_gram_[size_t(l)].empty() ? nullptr : value_gram_[size_t(l)].data(),
                         queries_.empty() ? nullptr : &queries_[size_t(l)],
                         rope_.empty() ? &kNoRope : &rope_[size_t(l)],
                         next_pos_,
                         seen_.empty() ? nullptr : &seen_[size_t(l)]};
    sc.scores = scorer_->score(pool, view);
  } else {
    sc.scores.score = sc.window.score;
  }
  stats_.layers[size_t(l)].ms_score += ms_since(t0);
}

void Compressor::assign_global_budgets() {
  // The global layers compete; the sliding ones keep their windows (chunk_b_ unused there).
  const int Hk = shape_.n_head_kv;
  std::vector<int> ranked;  // the global layers
  for (int l = 0; l < int(scored_.size()); l++)
    if (!slides(l)) ranked.push_back(l);
  const int layers = int(ranked.size());
  const int64_t total = int64_t(layers) * int64_t(Hk) * grown(stats_.budget.b);
  std::vector<std::vector<float>> rows;  // every ranked layer's heads, layer by layer
  int64_t selectable = 0;
  for (int l : ranked) {
    const Scored& sc = scored_[size_t(l)];
    const auto& by = sc.scores.first.empty() ? sc.scores.score : sc.scores.first;
    rows.insert(rows.end(), by.begin(), by.end());
    for (const auto& r : by) selectable += int64_t(r.size());
  }
  if (selectable <= total) {  // everything fits: every layer keeps all it holds
    for (int l : ranked) {
      int32_t most = 0;
      for (int32_t n : scored_[size_t(l)].lens) most = std::max(most, n);
      chunk_b_[size_t(l)] = most;
    }
    global_ready_ = true;
    return;
  }
  std::vector<int64_t> won(static_cast<size_t>(layers), 0);
  const std::vector<int32_t> per_head = global_topk_counts(rows, total);
  for (size_t r = 0; r < per_head.size(); r++) won[r / size_t(Hk)] += per_head[r];
  // b_l: the layer's winners per head, rounded so that the layers' budgets still sum to layers · (this chunk's b).
  const std::vector<int64_t> b = largest_remainder(won, Hk, total / Hk);
  for (int i = 0; i < layers; i++) chunk_b_[size_t(ranked[size_t(i)])] = int32_t(b[size_t(i)]);
  global_ready_ = true;
}

std::vector<std::vector<int32_t>> Compressor::select(int l, const Scored& sc) const {
  const std::vector<int32_t>& lens = sc.lens;
  const int Hk = shape_.n_head_kv;
  const int32_t w = shape_.w;
  const Budget& B = stats_.budget;
  std::vector<std::vector<int32_t>> keep(static_cast<size_t>(Hk));
  auto keep_all = [&] {
    for (int g = 0; g < Hk; g++)
      keep[size_t(g)].resize(size_t(lens[size_t(g)])), std::iota(keep[size_t(g)].begin(), keep[size_t(g)].end(), 0);
    return keep;
  };
  if (!B.compress) return keep_all();
  if (slides(l)) {  // the newest n_swa entries: every later query's window lies within them
    for (int g = 0; g < Hk; g++) {
      const int32_t n = lens[size_t(g)];
      for (int32_t j = std::max(0, n - layer_window(l)); j < n; j++) keep[size_t(g)].push_back(j);
    }
    return keep;
  }
  if (opts_.method.selection == Selection::Streaming) {
    // The first `sinks` entries and the most recent B − sinks.
    const int32_t sinks = std::min(opts_.sinks, B.B);
    for (int g = 0; g < Hk; g++) {
      const int32_t n = lens[size_t(g)];
      std::vector<int32_t>& idx = keep[size_t(g)];
      for (int32_t j = 0; j < std::min(sinks, n); j++) idx.push_back(j);
      for (int32_t j = std::max(sinks, n - (B.B - sinks)); j < n; j++) idx.push_back(j);
    }
    return keep;
  }
  // A layer that holds no more than its budget (early chunks of a long read) keeps everything.
  const int32_t b = chunk_b_[size_t(l)];
  int64_t selectable = 0;
  for (int32_t n : lens) selectable += n - w;
  if (selectable <= int64_t(Hk) * b) return keep_all();
  const EntryScores& es = sc.scores;
  const auto& rank_by = es.first.empty() ? es.score : es.first;  // the allocation follows the first stage
  std::vector<int32_t> caps =
      opts_.method.allocator == Allocator::Ada ? ada_caps(rank_by, b, opts_.alpha) : uniform_caps(Hk, b);
  for (int g = 0; g < Hk; g++) {
    const int32_t n = lens[size_t(g)], cap = caps[size_t(g)];
    if (es.first.empty()) {
      keep[size_t(g)] = top_tokens(es.score[size_t(g)], cap);
    } else {  // two stages: half the cap by the first scores, the rest by the second
      std::vector<float> second = es.score[size_t(g)];
      for (int32_t j : top_tokens(es.first[size_t(g)], cap / 2))
        second[size_t(j)] = std::numeric_limits<float>::infinity();
      keep[size_t(g)] = top_tokens(second, cap);
    }
    for (int32_t j = n - w; j < n; j++) keep[size_t(g)].push_back(j);  // the window is always kept
  }
  return keep;
}

std::vector<std::vector<int32_t>> Compressor::plan_layer(ThreadPool& pool, int l, const EntryReader& keys,
                                                         const EntryReader& values) {
  LayerStats& ls = stats_.layers[size_t(l)];
  const int Hk = shape_.n_head_kv;
  const Scored& sc = scored_[size_t(l)];
  const std::vector<int32_t>& lens = sc.lens;

  auto t0 = std::chrono::steady_clock::now();
  if (opts_.method.schedule == Schedule::Global && scorer_ && !global_ready_) assign_global_budgets();
  std::vector<std::vector<int32_t>> keep = select(l, sc);
  ls.ms_select += ms_since(t0);

  const bool window_layer = slides(l);  // kept by its window, not scored
  if (window_layer) {
    int32_t most = 0;
    for (int32_t n : lens) most = std::max(most, n);
    ls.budget = std::min(most, layer_window(l));
  } else {
    ls.budget = scorer_ ? chunk_b_[size_t(l)] + shape_.w : stats_.budget.B;
  }
  std::vector<std::vector<uint8_t>> mask(static_cast<size_t>(Hk));
  bool drops = false;
  // The ranking the kept entries were chosen by (none for a sliding layer, a method that does not score, or
  // the window, whose last w entries the rows leave out).
  const auto& ranked = sc.scores.first.empty() ? sc.scores.score : sc.scores.first;
  for (int g = 0; g < Hk; g++) {
    std::vector<float>& kept_scores = kept_scores_[size_t(l)][size_t(g)];
    kept_scores.clear();
    for (int32_t j : keep[size_t(g)]) {
      const bool scored = !window_layer && scorer_ && size_t(g) < ranked.size() && size_t(j) < ranked[size_t(g)].size();
      kept_scores.push_back(scored ? ranked[size_t(g)][size_t(j)] : std::numeric_limits<float>::infinity());
    }
    drops = drops || int32_t(keep[size_t(g)].size()) < lens[size_t(g)];
    if (window_layer) {  // no window scores: the statistics of attention stay unmeasured (finish: 1)
      keep_sources(l, g, keep[size_t(g)]);
      continue;
    }
    const std::vector<float>& a = sc.window.attn[size_t(g)];
    mask[size_t(g)].assign(size_t(lens[size_t(g)]), 0);
    double kept = 0, total = 0;
    for (int32_t j : keep[size_t(g)]) mask[size_t(g)][size_t(j)] = 1, kept += a[size_t(j)];
    for (float x : a) total += x;
    mass_sum_[size_t(l)][size_t(g)] += total > 0 ? kept / total : 1.0;
    conc_sum_[size_t(l)][size_t(g)] += concentration(a);
    keep_sources(l, g, keep[size_t(g)]);
  }
  if (!window_layer) steps_[size_t(l)]++;
  compacts_[size_t(l)] = drops;
  if (opts_.measure_loss && !window_layer) {
    WindowShape s = shape_;
    s.lens = lens;
    l1_sum_[size_t(l)] += attention_l1_loss(pool, s, sc.qw.data(), keys, values, mask);
    l1_steps_[size_t(l)]++;
  }
  return keep;
}

void Compressor::keep_sources(int l, int g, const std::vector<int32_t>& idx) {
  // The document tokens the head keeps (and, for kvzip, their scores so far).
  std::vector<int32_t>& src = source_[size_t(l)][size_t(g)];
  std::vector<int32_t> kept_src(idx.size());
  for (size_t i = 0; i < idx.size(); i++) kept_src[i] = src[size_t(idx[i])];
  src.swap(kept_src);
  if (!seen_.empty()) {
    std::vector<float>& seen = seen_[size_t(l)][size_t(g)];
    std::vector<float> kept_seen(idx.size());
    for (size_t i = 0; i < idx.size(); i++) kept_seen[i] = seen[size_t(idx[i])];
    seen.swap(kept_seen);
  }
}

size_t Compressor::chunked_bound(int32_t chunk, int32_t reread) const {
  const Budget& B = stats_.budget;
  if (!B.compress) return 0;
  size_t entries = 0;
  for (size_t l = 0; l < stats_.layers.size(); l++) {
    // The global schedule moves budget between layers from chunk to chunk; their sum stays that of flat.
    // A sliding layer keeps its window.
    const int32_t Bl = slides(int(l))                              ? layer_window(int(l))
                       : !scorer_                                  ? B.B
                       : opts_.method.schedule == Schedule::Global ? B.b + shape_.w
                                                                   : layer_b_[l] + shape_.w;
    entries += size_t(shape_.n_head_kv) * size_t(Bl + chunk + reread);
  }
  return entries * (entry_bytes_ + 4);
}

void Compressor::add_compact_time(int l, double ms_compact) { stats_.layers[size_t(l)].ms_compact += ms_compact; }

namespace {

// Little-endian scalars and vectors, appended and read back with bounds checks.
struct Writer {
  std::string out;
  template <typename T>
  void put(const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  template <typename T>
  void put_vec(const std::vector<T>& v) {
    put(uint64_t(v.size()));
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
};

struct Reader {
  const std::string& in;
  size_t at = 0;
  template <typename T>
  T get() {
    if (at + sizeof(T) > in.size()) fail("INTERNAL", "a read checkpoint's state is truncated");
    T v;
    std::memcpy(&v, in.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
  template <typename T>
  std::vector<T> get_vec(size_t expect = SIZE_MAX) {
    const uint64_t n = get<uint64_t>();
    if ((expect != SIZE_MAX && n != expect) || n > (in.size() - at) / sizeof(T))
      fail("INTERNAL", "a read checkpoint's state does not fit this read");
    std::vector<T> v(n);
    std::memcpy(v.data(), in.data() + at, n * sizeof(T));
    at += n * sizeof(T);
    return v;
  }
};

}  // namespace

std::string Compressor::save_state() const {
  Writer w;
  w.put(uint64_t(stats_.layers.size()));
  w.put(uint64_t(shape_.n_head_kv));
  w.put(stats_.kv_bytes_peak);
  for (size_t l = 0; l < stats_.layers.size(); l++) {
    const LayerStats& ls = stats_.layers[l];
    w.put(steps_[l]), w.put(l1_steps_[l]), w.put(l1_sum_[l]), w.put(compacts_[l]);
    w.put(ls.budget), w.put(ls.ms_score), w.put(ls.ms_select), w.put(ls.ms_compact);
    w.put_vec(mass_sum_[l]);
    w.put_vec(conc_sum_[l]);
    for (const auto& head : source_[l]) w.put_vec(head);
    if (!seen_.empty())
      for (const auto& head : seen_[l]) w.put_vec(head);
    if (!queries_.empty()) {
      w.put(queries_[l].count);
      w.put_vec(queries_[l].sum);
      w.put_vec(queries_[l].outer);
    }
  }
  return w.out;
}

void Compressor::load_state(const std::string& bytes) {
  Reader r{bytes};
  const size_t Hk = size_t(shape_.n_head_kv);
  if (r.get<uint64_t>() != stats_.layers.size() || r.get<uint64_t>() != Hk)
    fail("INTERNAL", "a read checkpoint's state is of another model");
  stats_.kv_bytes_peak = r.get<size_t>();
  for (size_t l = 0; l < stats_.layers.size(); l++) {
    LayerStats& ls = stats_.layers[l];
    steps_[l] = r.get<int32_t>(), l1_steps_[l] = r.get<int32_t>(), l1_sum_[l] = r.get<double>();
    compacts_[l] = r.get<uint8_t>();
    ls.budget = r.get<int32_t>(), ls.ms_score = r.get<double>(), ls.ms_select = r.get<double>();
    ls.ms_compact = r.get<double>();
    mass_sum_[l] = r.get_vec<double>(Hk);
    conc_sum_[l] = r.get_vec<double>(Hk);
    for (auto& head : source_[l]) {
      head = r.get_vec<int32_t>();
      for (int32_t t : head)
        if (t < 0 || t >= shape_.L) fail("INTERNAL", "a read checkpoint's state does not fit this read");
    }
    if (!seen_.empty())
      for (size_t g = 0; g < Hk; g++) seen_[l][g] = r.get_vec<float>(source_[l][g].size());
    if (!queries_.empty()) {
      queries_[l].count = r.get<double>();
      const size_t HD = size_t(shape_.n_head) * size_t(shape_.head_dim);
      queries_[l].sum = r.get_vec<double>();
      queries_[l].outer = r.get_vec<double>();
      if (queries_[l].sum.size() != (queries_[l].sum.empty() ? 0 : HD) ||
          queries_[l].outer.size() != queries_[l].sum.size() * size_t(shape_.head_dim))
        fail("INTERNAL", "a read checkpoint's state does not fit this read");
    }
  }
  if (r.at != bytes.size()) fail("INTERNAL", "a read checkpoint's state does not fit this read");
}

void Compressor::finish() {
  const int Hk = shape_.n_head_kv;
  stats_.kv_bytes_full = stats_.kv_bytes_kept = 0;
  stats_.ms_compress = 0;
  std::fill(stats_.token_retention.begin(), stats_.token_retention.end(), 0);
  for (size_t l = 0; l < stats_.layers.size(); l++) {
    LayerStats& ls = stats_.layers[l];
    const double steps = std::max(steps_[l], 1);
    ls.heads.assign(size_t(Hk), HeadStats());
    ls.bytes_kept = 0;
    double mass_sum = 0;
    for (int g = 0; g < Hk; g++) {
      HeadStats& hs = ls.heads[size_t(g)];
      const std::vector<int32_t>& src = source_[l][size_t(g)];
      hs.kept = int32_t(src.size());
      hs.retained_mass = steps_[l] ? mass_sum_[l][size_t(g)] / steps : 1.0;
      hs.concentration = steps_[l] ? conc_sum_[l][size_t(g)] / steps : 1.0;
      mass_sum += hs.retained_mass;
      for (int32_t t : src) stats_.token_retention[size_t(t)]++;
      ls.bytes_kept += src.size() * entry_bytes_;
    }
    ls.eps_over_c = 2.0 * (double(Hk) - mass_sum);
    ls.attn_l1 = l1_steps_[l] ? l1_sum_[l] / l1_steps_[l] : -1;
    stats_.kv_bytes_full += ls.bytes_full;
    stats_.kv_bytes_kept += ls.bytes_kept;
    stats_.ms_compress += ls.ms_score + ls.ms_select + ls.ms_compact;
  }
}

}  // namespace folio::kv
