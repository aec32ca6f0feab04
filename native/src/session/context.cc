#include "session/context.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "backend/cpu-backend.h"
#include "backend/gpu-backend.h"
#include "backend/gpu-loader.h"
#include "core/error.h"
#include "forward/compress-layer.h"
#include "forward/rebase.h"
#include "kv/allocator.h"
#include "kv/compressor.h"
#include "quant/quant.h"

namespace folio {

namespace {
gpu::Kind gpu_kind(BackendKind b) { return b == BackendKind::Cuda ? gpu::Kind::Cuda : gpu::Kind::Vulkan; }
}  // namespace

const char* backend_name(BackendKind b) { return b == BackendKind::Cpu ? "cpu" : gpu::kind_name(gpu_kind(b)); }

bool backend_from_name(const std::string& name, BackendKind& out) {
  for (BackendKind b : {BackendKind::Cpu, BackendKind::Cuda, BackendKind::Vulkan})
    if (name == backend_name(b)) {
      out = b;
      return true;
    }
  return false;
}

BackendKind automatic_backend(const ContextParams& p) {
  return p.reference_attention ? BackendKind::Cpu : automatic_backend();
}

BackendKind automatic_backend() {
  BackendKind b = BackendKind::Cpu;
  if (gpu::status().available) backend_from_name(gpu::status().backend, b);
  return b;
}

Context::Context(const Model& model, const ContextParams& params)
    : model_(model), params_(params), pool_(params.n_threads) {
  const HParams& hp = model.hparams();
  if (params_.n_ctx <= 0) params_.n_ctx = std::min<int32_t>(hp.n_ctx_train, kDefaultContext);
  if (params_.n_ctx > hp.n_ctx_train)
    fail("CONTEXT_TOO_LONG", strfmt("a context of %d tokens exceeds the model's context length of %d tokens",
                                    params_.n_ctx, hp.n_ctx_train));
  if (params_.n_batch <= 0) params_.n_batch = 512;
  if (params_.backend != BackendKind::Cpu) {
    if (params_.reference_attention) fail("INVALID_ARGUMENT", "the reference attention runs on the CPU backend only");
    backend_ = backend::gpu_backend(gpu_kind(params_.backend));
    weights_ = forward::BackendWeights::of(model_, *backend_, pool_);  // uploaded now, not in the first job
  } else {
    backend_ = backend::make_cpu_backend(pool_, params_.reference_attention);
  }
  kv_ = backend_->make_kv_store(hp.n_layer, hp.n_head_kv, hp.head_dim, hp.head_dim_v, params_.kv);
  pass_ = std::make_unique<forward::ForwardPass>(hp, *backend_, pool_, params_.n_batch);
}

std::unique_ptr<Context> Context::fork() const {
  auto c = std::make_unique<Context>(model_, params_);
  c->kv_ = kv_->clone();
  c->n_past_ = n_past_;
  c->scores_ = scores_;
  return c;
}

const FlatKvCache& Context::cache() const {
  if (const FlatKvCache* c = kv_->host()) return *c;
  if (host_stale_) {
    host_ = kv_->to_host();
    host_stale_ = false;
  }
  return host_;
}

void Context::restore(FlatKvCache cache, int32_t n_past, kv::KeptScores scores) {
  kv_ = backend_->kv_store_from_host(std::move(cache));
  host_stale_ = true;
  n_past_ = n_past;
  scores_ = std::move(scores);
}

int32_t Context::append_part(const FlatKvCache& part, int32_t from, int32_t to, bool pack,
                             const kv::KeptScores* part_scores) {
  const HParams& hp = model_.hparams();
  if (part.format() != kv_->format() || part.n_layer() != hp.n_layer || part.n_head_kv() != hp.n_head_kv)
    fail("INVALID_ARGUMENT", "a saved cache of another precision or layout cannot join this one");
  if (from < 0 || to < from) fail("INVALID_ARGUMENT", strfmt("no positions %d to %d", from, to));
  // Each head's entries in [from, to), [layer][head]: contiguous, as a head's positions ascend.
  std::vector<std::vector<int32_t>> first(size_t(hp.n_layer)), count(size_t(hp.n_layer));
  int32_t most = 0;  // the most entries any head holds in the span
  for (int l = 0; l < hp.n_layer; l++)
    for (int g = 0; g < hp.n_head_kv; g++) {
      const int32_t* p = part.layer(l).positions(g);
      const int32_t n = part.len(l, g);
      const int32_t j0 = int32_t(std::lower_bound(p, p + n, from) - p);
      first[size_t(l)].push_back(j0);
      count[size_t(l)].push_back(int32_t(std::lower_bound(p, p + n, to) - p) - j0);
      most = std::max(most, count[size_t(l)].back());
    }
  // Packed, the span takes as many positions as its fullest head keeps (rebase_positions' rule).
  const int32_t span = pack ? most : to - from;
  if (n_past_ + span > params_.n_ctx)
    fail("CONTEXT_FULL",
         strfmt("the context holds %d positions: %d taken and %d more do not fit", params_.n_ctx, n_past_, span));
  // Changed in place where the store is on the host (a set of N parts costs N appends, not N copies).
  FlatKvCache host = kv_->release_host();
  host_stale_ = true;
  try {
    const size_t kb = host.k_entry_bytes();
    const float* freq_factors = rope_factors_host();
    std::vector<float> k;
    std::vector<uint8_t> kbytes;
    std::vector<int32_t> pos, delta, caps(size_t(hp.n_head_kv));
    for (int l = 0; l < hp.n_layer; l++) {
      const LayerKv& P = part.layer(l);
      // A layer that must grow gives every head twice what it needs (never past the context's positions), so that
      // a set of N parts lays each layer out O(log N) times, not N; reselect trims what is left once the set is
      // whole.
      bool grows = false;
      for (int g = 0; g < hp.n_head_kv; g++) {
        caps[size_t(g)] = host.len(l, g) + count[size_t(l)][size_t(g)] +
                          std::min(FlatKvCache::kSpare, params_.n_ctx - n_past_ - span);
        grows = grows || caps[size_t(g)] > host.layer(l).heads[size_t(g)].cap;
      }
      if (grows)
        for (int32_t& c : caps) c = std::max(c, std::min(2 * c, params_.n_ctx));
      host.reserve_heads(l, caps);
      for (int g = 0; g < hp.n_head_kv; g++) {
        const int32_t n = count[size_t(l)][size_t(g)], j0 = first[size_t(l)][size_t(g)];
        if (n == 0) continue;
        // Own spacing: every entry moves by n_past − from. Packed: head g's n entries end at the span's last
        // position, n_past + span − n .. n_past + span − 1, in their order.
        pos.resize(size_t(n));
        delta.resize(size_t(n));
        for (int32_t i = 0; i < n; i++) {
          const int32_t old = P.positions(g)[j0 + i];
          pos[size_t(i)] = pack ? n_past_ + span - n + i : old + n_past_ - from;
          delta[size_t(i)] = pos[size_t(i)] - old;
        }
        k.resize(size_t(n) * size_t(hp.head_dim));
        part.read_k(l, g, j0, n, k.data());
        forward::rotate_keys(hp, freq_factors, pool_, l, k.data(), n, delta.data());
        kbytes.resize(size_t(n) * kb);
        kv::encode(host.format().k, host.format().rotate_k(), k.data(), kbytes.data(), hp.head_dim, n);
        const uint8_t* v = P.v.data() + size_t(P.heads[size_t(g)].offset + j0) * part.v_entry_bytes();
        host.append_raw(l, g, pos.data(), kbytes.data(), v, n);
      }
    }
  } catch (...) {
    host.truncate(n_past_);  // what was appended goes: the cache is as it was
    restore(std::move(host), n_past_, std::move(scores_));
    throw;
  }
  // The part's scores follow its entries, each head's own scored up to what it held before (none: +infinity).
  const bool scored = !scores_.empty() || (part_scores && !part_scores->empty());
  if (scored) {
    const float none = std::numeric_limits<float>::infinity();
    scores_.resize(size_t(hp.n_layer), std::vector<std::vector<float>>(size_t(hp.n_head_kv)));
    for (int l = 0; l < hp.n_layer; l++)
      for (int g = 0; g < hp.n_head_kv; g++) {
        std::vector<float>& row = scores_[size_t(l)][size_t(g)];
        const int32_t n = count[size_t(l)][size_t(g)], j0 = first[size_t(l)][size_t(g)];
        row.resize(size_t(host.len(l, g) - n), none);
        const std::vector<float>* theirs =
            part_scores && !part_scores->empty() ? &(*part_scores)[size_t(l)][size_t(g)] : nullptr;
        for (int32_t i = 0; i < n; i++)
          row.push_back(theirs && size_t(j0 + i) < theirs->size() ? (*theirs)[size_t(j0 + i)] : none);
      }
  }
  restore(std::move(host), n_past_ + span, std::move(scores_));
  return n_past_;
}

std::vector<std::vector<int32_t>> Context::span_entries(const std::vector<std::pair<int32_t, int32_t>>& spans) const {
  const HParams& hp = model_.hparams();
  std::vector<std::vector<int32_t>> out(spans.size(), std::vector<int32_t>(size_t(hp.n_layer) * size_t(hp.n_head_kv)));
  std::vector<int32_t> pos;
  for (int l = 0; l < hp.n_layer; l++)
    for (int g = 0; g < hp.n_head_kv; g++) {
      pos.resize(size_t(kv_->len(l, g)));
      kv_->read_pos(l, g, kv_->len(l, g), pos.data());
      for (size_t s = 0; s < spans.size(); s++) {
        const auto lo = std::lower_bound(pos.begin(), pos.end(), spans[s].first);
        out[s][size_t(l) * size_t(hp.n_head_kv) + size_t(g)] =
            int32_t(std::lower_bound(lo, pos.end(), spans[s].second) - lo);
      }
    }
  return out;
}

std::vector<std::vector<int32_t>> Context::reselect(const std::vector<std::pair<int32_t, int32_t>>& spans,
                                                    double keep_ratio, double alpha, bool across_layers) {
  if (!(keep_ratio > 0 && keep_ratio <= 1))
    fail("INVALID_ARGUMENT", strfmt("the kept share must be above 0 and at most 1, not %g", keep_ratio));
  if (!(alpha >= 0 && alpha <= 1)) fail("INVALID_ARGUMENT", strfmt("alpha must be within 0 and 1, not %g", alpha));
  for (size_t s = 0; s < spans.size(); s++)
    if (spans[s].first < 0 || spans[s].second < spans[s].first || spans[s].second > n_past_ ||
        (s > 0 && spans[s].first < spans[s - 1].second))
      fail("INVALID_ARGUMENT", strfmt("the spans must be ascending, apart and within the %d positions held", n_past_));
  const HParams& hp = model_.hparams();
  // Whatever it keeps, each head is left with only its spare room (appending the set may have left more).
  const int32_t spare = std::min(FlatKvCache::kSpare, params_.n_ctx - n_past_);
  if (keep_ratio < 1 && !scores_.empty()) {
    // The candidates: per head, the entries in a span that a read scored, and where each is in the head.
    kv::KeptScores rows(size_t(hp.n_layer), std::vector<std::vector<float>>(size_t(hp.n_head_kv)));
    std::vector<std::vector<std::vector<int32_t>>> at(size_t(hp.n_layer),
                                                      std::vector<std::vector<int32_t>>(size_t(hp.n_head_kv)));
    std::vector<int32_t> pos;
    for (int l = 0; l < hp.n_layer; l++)
      for (int g = 0; g < hp.n_head_kv; g++) {
        const std::vector<float>& sc = scores_[size_t(l)][size_t(g)];
        pos.resize(size_t(kv_->len(l, g)));
        kv_->read_pos(l, g, kv_->len(l, g), pos.data());
        for (size_t i = 0; i < pos.size() && i < sc.size(); i++) {
          const auto s =
              std::upper_bound(spans.begin(), spans.end(), pos[i],
                               [](int32_t p, const std::pair<int32_t, int32_t>& sp) { return p < sp.first; });
          const bool in_span = s != spans.begin() && pos[i] < std::prev(s)->second;
          if (in_span && std::isfinite(sc[i])) {
            rows[size_t(l)][size_t(g)].push_back(sc[i]);
            at[size_t(l)][size_t(g)].push_back(int32_t(i));
          }
        }
      }
    const auto chosen = kv::keep_over_set(rows, keep_ratio, alpha, across_layers);
    host_stale_ = true;
    for (int l = 0; l < hp.n_layer; l++) {
      std::vector<std::vector<int32_t>> entries(size_t(hp.n_head_kv));
      for (int g = 0; g < hp.n_head_kv; g++) {
        // Every entry but the candidates not chosen, in order.
        const std::vector<int32_t>& cand = at[size_t(l)][size_t(g)];
        std::vector<uint8_t> keep(size_t(kv_->len(l, g)), 1);
        for (int32_t i : cand) keep[size_t(i)] = 0;
        for (int32_t c : chosen[size_t(l)][size_t(g)]) keep[size_t(cand[size_t(c)])] = 1;
        std::vector<float>& sc = scores_[size_t(l)][size_t(g)];
        std::vector<float> kept_scores;
        for (int32_t i = 0; i < int32_t(keep.size()); i++)
          if (keep[size_t(i)]) {
            entries[size_t(g)].push_back(i);
            if (size_t(i) < sc.size()) kept_scores.push_back(sc[size_t(i)]);
          }
        sc.swap(kept_scores);
      }
      kv_->compact(l, entries, spare);
    }
  } else {
    // Nothing to drop: each layer laid out once more, its heads keeping only their spare room.
    for (int l = 0; l < hp.n_layer; l++) {
      std::vector<std::vector<int32_t>> all(size_t(hp.n_head_kv));
      for (int g = 0; g < hp.n_head_kv; g++) {
        all[size_t(g)].resize(size_t(kv_->len(l, g)));
        std::iota(all[size_t(g)].begin(), all[size_t(g)].end(), 0);
      }
      kv_->compact(l, all, spare);
    }
    host_stale_ = true;
  }
  return span_entries(spans);
}

void Context::truncate(int32_t n) {
  if (n < 0 || n > n_past_)
    fail("INVALID_ARGUMENT", strfmt("cannot truncate to %d tokens: the context holds %d", n, n_past_));
  kv_->truncate(n);
  host_stale_ = true;
  n_past_ = n;
  for (int l = 0; l < int(scores_.size()); l++)
    for (int g = 0; g < int(scores_[size_t(l)].size()); g++) {
      std::vector<float>& row = scores_[size_t(l)][size_t(g)];
      row.resize(std::min(row.size(), size_t(kv_->len(l, g))));
    }
}

int32_t Context::pack_span(int32_t from, int32_t to) {
  if (from < 0 || to < from || to > n_past_)
    fail("INVALID_ARGUMENT", strfmt("cannot pack positions %d to %d: the context holds %d", from, to, n_past_));
  const int32_t R = forward::pack_span(*kv_, model_.hparams(), rope_factors_host(), pool_, from, to);
  host_stale_ = true;
  n_past_ -= to - from - R;
  return n_past_;
}

void Context::forget(int32_t from, int32_t to) {
  if (from < 0 || to < from || to > n_past_)
    fail("INVALID_ARGUMENT", strfmt("cannot forget positions %d to %d: the context holds %d", from, to, n_past_));
  if (from == to) return;
  const float* freq_factors = rope_factors_host();
  forward::forget_positions(*kv_, model_.hparams(), freq_factors, pool_, from, to);
  host_stale_ = true;
  scores_.clear();
  n_past_ -= to - from;
}

int32_t Context::compress_span(int32_t from, int32_t to, double keep_ratio, const std::vector<int32_t>& window,
                               const std::atomic<bool>* cancel) {
  if (from < 0 || to < from || to > n_past_)
    fail("INVALID_ARGUMENT", strfmt("cannot compress positions %d to %d: the context holds %d", from, to, n_past_));
  if (!(keep_ratio >= 0 && keep_ratio <= 1))
    fail("INVALID_ARGUMENT", strfmt("the kept ratio must be within 0 and 1, not %g", keep_ratio));
  check_ids(window);
  if (from == to) return n_past_;
  const HParams& hp = model_.hparams();
  forward::AttentionWatch seen = watch_entries();  // [layer][head][entry] the window's largest attention
  if (keep_ratio > 0) {
    // At the positions after the conversation, which may pass the context's end as a re-reading does: nothing
    // of it is kept. A window longer than the context is cut to its last n_ctx tokens.
    const int64_t n = std::min<int64_t>(int64_t(window.size()), params_.n_ctx);
    const int32_t* w = window.data() + (int64_t(window.size()) - n);
    const int32_t start = n_past_;
    host_stale_ = true;
    try {
      if (!weights_) weights_ = forward::BackendWeights::of(model_, *backend_, pool_);
      forward::Control ctl(*backend_, nullptr, cancel);
      pass_->run(weights_->get(), *kv_, w, n, start, params_.n_ctx, false, nullptr, ctl, nullptr, &seen);
    } catch (...) {
      kv_->truncate(start);
      throw;
    }
    kv_->truncate(start);
  }
  const float* freq_factors = rope_factors_host();
  const int32_t R = forward::squeeze_span(*kv_, hp, freq_factors, pool_, from, to,
                                          forward::top_of_span(*kv_, from, to, keep_ratio, seen));
  host_stale_ = true;
  scores_.clear();
  n_past_ -= to - from - R;
  return n_past_;
}

forward::AttentionWatch Context::watch_entries() const {
  const HParams& hp = model_.hparams();
  forward::AttentionWatch w(size_t(hp.n_layer));
  for (int l = 0; l < hp.n_layer; l++)
    for (int g = 0; g < hp.n_head_kv; g++) w[size_t(l)].emplace_back(size_t(kv_->len(l, g)), 0.0f);
  return w;
}

std::vector<std::vector<float>> Context::by_position(const forward::AttentionWatch& watch, int32_t positions) const {
  std::vector<std::vector<float>> out(watch.size(), std::vector<float>(size_t(std::max(positions, 0)), 0.0f));
  std::vector<int32_t> pos;
  for (size_t l = 0; l < watch.size(); l++)
    for (size_t g = 0; g < watch[l].size(); g++) {
      const int32_t n = std::min<int32_t>(int32_t(watch[l][g].size()), kv_->len(int(l), int(g)));
      pos.resize(size_t(n));
      kv_->read_pos(int(l), int(g), n, pos.data());
      for (int32_t j = 0; j < n; j++)
        if (pos[size_t(j)] >= 0 && pos[size_t(j)] < positions) out[l][size_t(pos[size_t(j)])] += watch[l][g][size_t(j)];
    }
  return out;
}

void Context::check_tokens(const std::vector<int32_t>& tokens) const {
  const int64_t n = int64_t(tokens.size());
  check_ids(tokens);
  if (n_past_ + n > params_.n_ctx)
    fail("CONTEXT_FULL",
         strfmt("%lld new tokens do not fit: the context holds %d of %d tokens", (long long)n, n_past_, params_.n_ctx));
}

void Context::check_ids(const std::vector<int32_t>& tokens) const {
  const HParams& hp = model_.hparams();
  if (tokens.empty()) fail("INVALID_ARGUMENT", "nothing to evaluate: the token list is empty");
  for (int32_t t : tokens)
    if (t < 0 || t >= hp.n_vocab)
      fail("INVALID_TOKEN", strfmt("token id %d is outside the vocabulary (0 to %d)", t, hp.n_vocab - 1));
}

// One forward pass over the tokens from n_past on; whatever happens, nothing half-done stays in the cache.
void Context::run(const std::vector<int32_t>& tokens, bool all_logits, float* logits, const ProgressFn& progress,
                  const std::atomic<bool>* cancel, kv::Compressor* comp, forward::AttentionWatch* watch) {
  const int32_t start = n_past_;
  host_stale_ = true;
  try {
    if (!weights_)
      weights_ = forward::BackendWeights::of(model_, *backend_, pool_);  // the CPU repacks here, in the job
    forward::Control ctl(*backend_, progress, cancel);
    pass_->run(weights_->get(), *kv_, tokens.data(), int64_t(tokens.size()), start, params_.n_ctx, all_logits, logits,
               ctl, comp, watch, backend::Backend::Fold::Sum);
    n_past_ = start + int32_t(tokens.size());
  } catch (...) {
    kv_->truncate(start);
    throw;
  }
}

void Context::eval(const std::vector<int32_t>& tokens, bool all_logits, std::vector<float>& logits,
                   const ProgressFn& progress, const std::atomic<bool>* cancel, forward::AttentionWatch* watch) {
  check_tokens(tokens);
  logits.assign(size_t(all_logits ? tokens.size() : 1) * size_t(model_.hparams().n_vocab), 0.0f);
  run(tokens, all_logits, logits.data(), progress, cancel, nullptr, watch);
}

void Context::prepare_scorer(kv::Compressor& comp) {
  const kv::ScorerRow* sc = comp.scorer();
  if (!sc) return;
  const HParams& hp = model_.hparams();
  if (sc->value_gram)
    for (int l = 0; l < hp.n_layer; l++)
      comp.set_value_gram(l,
                          forward::value_gram(model_.weights().layers[size_t(l)].wo, hp.n_head, hp.head_dim_v, pool_));
  if (sc->query_stats) {
    std::vector<kv::RopeAngles> per_layer(size_t(hp.n_layer));
    const float* ff = rope_factors_host();
    for (int l = 0; l < hp.n_layer; l++) {
      const backend::RopeParams p = forward::layer_rope(hp, l);
      kv::RopeAngles& rope = per_layer[size_t(l)];
      rope.neox = p.neox;
      for (int i = 0; i < hp.rope_dim / 2; i++)
        rope.inv_freq.push_back(p.freq_scale * std::pow(p.base, -2.0f * float(i) / float(hp.rope_dim)) /
                                (ff ? ff[i] : 1.0f));
    }
    comp.set_rope(std::move(per_layer));
  }
}

namespace {
// KVzip's re-reading: the document is re-read in pieces of at most this many tokens (its authors' 2,000), each
// after a request to repeat it (the pieces after the first quote the 8 tokens they start after).
constexpr int32_t kRereadPiece = 2048;
constexpr int32_t kRereadQuote = 8;
constexpr const char* kRepeatFirst = "\n\nRepeat the previous context exactly.";
constexpr const char* kRepeatFrom = "\n\nRepeat the part of the previous context exactly, starting with ";
}  // namespace

int32_t Context::reread_room(int32_t chunk) const {
  const int32_t n =
      std::min(chunk, kRereadPiece) + kRereadQuote + int32_t(model_.vocab().tokenize(kRepeatFrom, false, false).size());
  return n + std::max<int32_t>(FlatKvCache::kSpare, n / 4);  // the forward pass's slack for what it appends
}

void Context::reread(kv::Compressor& comp, const std::vector<int32_t>& tokens, int32_t first, int32_t m,
                     const std::atomic<bool>* cancel, const ProgressFn& progress) {
  const int32_t start = n_past_;
  for (int32_t t = first; t < first + m; t += kRereadPiece) {
    std::vector<int32_t> in = model_.vocab().tokenize(t == 0 ? kRepeatFirst : kRepeatFrom, false, false);
    if (t > 0) in.insert(in.end(), tokens.begin() + std::max(0, t - kRereadQuote), tokens.begin() + t);
    const int32_t piece = std::min(first + m, t + kRereadPiece) - t;
    in.insert(in.end(), tokens.begin() + t, tokens.begin() + t + piece);
    // Progress in the piece's tokens (the request to repeat it counted in them).
    const int64_t at = t - first, len = int64_t(in.size());
    const ProgressFn piece_progress =
        progress ? ProgressFn([&](int64_t done, int64_t) { progress(at + done * piece / len, m); }) : ProgressFn();
    // At the positions after the document, which may pass the context's end: nothing of it is kept.
    forward::Control ctl(*backend_, piece_progress, cancel);
    pass_->run(weights_->get(), *kv_, in.data(), int64_t(in.size()), start, params_.n_ctx, false, nullptr, ctl, nullptr,
               &comp.seen());
    comp.note_reserved(kv_->bytes_reserved());
    kv_->truncate(start);
  }
}

kv::CompressionStats Context::compress(const std::vector<int32_t>& tokens, const kv::CompressOptions& opts,
                                       std::vector<float>& logits, const ProgressFn& progress,
                                       const std::atomic<bool>* cancel, const ReadOptions& read,
                                       const ChunkHook& on_chunk, const ReadResume* resume) {
  if (n_past_ != 0 && !resume)
    fail("NOT_EMPTY", "compression reads the whole prefix in one prefill: start from an empty session");
  kv::validate(opts);
  if (read.chunk < ReadOptions::kAutoChunk || read.room < 0)
    fail("INVALID_ARGUMENT", "the chunk size and the room must not be negative");
  check_ids(tokens);
  const HParams& hp = model_.hparams();
  const int32_t L = int32_t(tokens.size());
  if (!read.rebase && L > params_.n_ctx)
    fail("CONTEXT_FULL", strfmt("the document is %d tokens and the context holds %d positions: read it with re-based "
                                "positions, or a part of it",
                                L, params_.n_ctx));
  kv::WindowShape shape;
  shape.n_head = hp.n_head;
  shape.n_head_kv = hp.n_head_kv;
  shape.head_dim = hp.head_dim;
  shape.head_dim_v = hp.head_dim_v;
  shape.L = L;
  kv::Compressor comp(opts, shape, hp.n_layer, kv_->k_entry_bytes(), kv_->v_entry_bytes(),
                      kv_format_name(kv_->format()));
  prepare_scorer(comp);
  std::vector<int32_t> windows(static_cast<size_t>(hp.n_layer));
  for (int l = 0; l < hp.n_layer; l++) windows[size_t(l)] = hp.layer_window(l);
  comp.set_windows(std::move(windows));
  const int32_t chunk = read.chunk != ReadOptions::kAutoChunk ? read.chunk
                        : comp.budget().compress              ? kv::default_chunk(comp.budget().B, params_.n_ctx)
                                                              : 0;
  const std::vector<int32_t> starts = kv::chunk_starts(L, chunk, comp.window());
  const int32_t n_chunks = int32_t(starts.size()) - 1;
  kv::CompressionStats& st = comp.stats();
  st.chunks = n_chunks;
  st.chunk_tokens = n_chunks > 1 ? starts[1] : L;
  int32_t longest = 0;
  for (int32_t c = 0; c < n_chunks; c++) longest = std::max(longest, starts[size_t(c) + 1] - starts[size_t(c)]);
  const bool rereads = comp.scorer() && comp.scorer()->rereads;
  if (n_chunks > 1)
    st.kv_bytes_bound = comp.chunked_bound(std::max(longest, FlatKvCache::kSpare), rereads ? reread_room(longest) : 0);
  const float* freq_factors = rope_factors_host();

  logits.assign(size_t(hp.n_vocab), 0.0f);
  const auto t0 = std::chrono::steady_clock::now();
  int32_t c0 = 0;
  if (resume) {
    if (resume->chunks_done <= 0 || resume->chunks_done >= n_chunks)
      fail("INTERNAL", "a read checkpoint of another read: its chunks do not match");
    comp.load_state(resume->state);
    c0 = resume->chunks_done;
    st.rebased = resume->rebased;
  }
  try {
    for (int32_t c = c0; c < n_chunks; c++) {
      const int32_t first = starts[size_t(c)], m = starts[size_t(c) + 1] - first;
      // Positions this chunk needs: its own, and after the last one the room for the conversation. A re-based
      // read keeps that room free all along, so that it re-bases as seldom as possible.
      const int32_t need = m + (c + 1 == n_chunks || read.rebase ? read.room : 0);
      if (read.rebase && n_past_ + need > params_.n_ctx) {
        n_past_ = forward::rebase_positions(*kv_, hp, freq_factors, pool_, params_.n_ctx - need);
        st.rebased = true;
      }
      if (n_past_ + need > params_.n_ctx)
        fail("CONTEXT_FULL", strfmt("the context's %d positions cannot hold a chunk of %d tokens and %d for the "
                                    "conversation: use a larger context or a smaller room",
                                    params_.n_ctx, m, read.room));
      // Progress in tokens of work: a re-reading scorer reads every chunk twice.
      const int64_t f = rereads ? 2 : 1;
      const ProgressFn chunk_progress =
          progress ? ProgressFn([&](int64_t done, int64_t) { progress(f * first + done, f * L); }) : ProgressFn();
      comp.begin_chunk(first, m, n_past_);
      comp.set_room(c + 1 < n_chunks ? starts[size_t(c) + 2] - starts[size_t(c) + 1] : 0);
      const bool last = c + 1 == n_chunks;
      run(std::vector<int32_t>(tokens.begin() + first, tokens.begin() + first + m), false,
          last ? logits.data() : nullptr, chunk_progress, cancel, &comp);
      comp.note_reserved(kv_->bytes_reserved());
      if (comp.deferred()) {  // every layer is scored: re-read the chunk (kvzip), then cut them all
        if (rereads) {
          reread(comp, tokens, first, m, cancel,
                 progress ? ProgressFn(
                                [&](int64_t done, int64_t) { progress(2 * int64_t(first) + m + done, 2 * int64_t(L)); })
                          : ProgressFn());
          for (int l = 0; l < hp.n_layer; l++) forward::rank_layer(comp, *kv_, pool_, l);
        }
        const int32_t spare = std::min<int32_t>(FlatKvCache::kSpare, params_.n_ctx - n_past_);
        for (int l = 0; l < hp.n_layer; l++) forward::compact_layer(comp, *kv_, pool_, l, spare);
      }
      if (st.kv_bytes_bound && st.kv_bytes_peak > st.kv_bytes_bound)
        fail("INTERNAL", strfmt("reading chunk %d of %d, the cache held %zu bytes, over its bound of %zu", c + 1,
                                n_chunks, st.kv_bytes_peak, st.kv_bytes_bound));
      if (on_chunk && c + 1 < n_chunks) on_chunk(c + 1, starts[size_t(c) + 1], {c + 1, st.rebased, comp.save_state()});
    }
    // Packed: the kept entries end at the most any head keeps (rebase_positions), wherever the read left them.
    if (read.pack_positions && comp.budget().compress) {
      n_past_ = forward::rebase_positions(*kv_, hp, freq_factors, pool_, n_past_);
      st.rebased = true;
    }
  } catch (...) {
    kv_ = backend_->make_kv_store(hp.n_layer, hp.n_head_kv, hp.head_dim, hp.head_dim_v, params_.kv);
    host_stale_ = true;
    n_past_ = 0;
    scores_.clear();
    throw;
  }
  comp.finish();
  scores_ = comp.take_kept_scores();
  st.positions = n_past_;
  st.ms_prefill = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace folio
