#include "session/session.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/hash.h"
#include "tokenizer/vocab.h"

namespace folio {

Session::Session(std::shared_ptr<const Model> model, const ContextParams& params)
    : model_(std::move(model)), ctx_(std::make_unique<Context>(*model_, params)) {}

std::unique_ptr<Session> Session::fork() const {
  auto s = std::make_unique<Session>(model_, ctx_->params());
  s->ctx_ = ctx_->fork();
  s->tokens_ = tokens_;
  s->last_logits_ = last_logits_;
  return s;
}

void Session::prefill(const std::vector<int32_t>& tokens, bool all_logits, std::vector<float>& logits,
                      const ProgressFn& progress, const std::atomic<bool>* cancel) {
  ctx_->eval(tokens, all_logits, logits, progress, cancel);
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  const size_t nv = size_t(model_->hparams().n_vocab);
  last_logits_.assign(logits.end() - std::ptrdiff_t(nv), logits.end());
}

namespace {

constexpr char kCheckpointMagic[] = "FOLIO-READ-1";

// What makes two reads the same: the tokens, every option that changes what is kept, the context.
uint64_t read_key(const std::vector<int32_t>& tokens, const kv::CompressOptions& o, const ReadOptions& r,
                  const ContextParams& p) {
  Hash64 h;
  h.update(tokens.data(), tokens.size() * 4);
  h.update(o.method.name.data(), o.method.name.size());
  for (double x : {o.budget_ratio, o.alpha}) h.update_value(x);
  for (int32_t x : {o.budget_tokens, o.window, o.kernel, o.beta, o.sinks, r.chunk, r.room, p.n_ctx}) h.update_value(x);
  h.update_value(uint8_t(r.rebase));
  h.update_value(uint8_t(r.pack_positions));
  for (uint8_t x : {uint8_t(p.kv.k), uint8_t(p.kv.v), uint8_t(p.kv.rotate_k()), uint8_t(p.kv.rotate_v())})
    h.update_value(x);
  return h.digest();
}

std::string encode_checkpoint(uint64_t key, const ReadResume& at) {
  std::string m(kCheckpointMagic, sizeof(kCheckpointMagic));
  m.append(reinterpret_cast<const char*>(&key), 8);
  m.append(reinterpret_cast<const char*>(&at.chunks_done), 4);
  m.push_back(char(at.rebased));
  return m + at.state;
}

bool decode_checkpoint(const std::string& m, uint64_t key, ReadResume* at) {
  const size_t head = sizeof(kCheckpointMagic) + 8 + 4 + 1;
  if (m.size() < head ||
      m.compare(0, sizeof(kCheckpointMagic), std::string(kCheckpointMagic, sizeof(kCheckpointMagic))))
    return false;
  uint64_t k;
  std::memcpy(&k, m.data() + sizeof(kCheckpointMagic), 8);
  if (k != key) return false;
  std::memcpy(&at->chunks_done, m.data() + sizeof(kCheckpointMagic) + 8, 4);
  at->rebased = m[head - 1] != 0;
  at->state = m.substr(head);
  return true;
}

}  // namespace

kv::CompressionStats Session::compress(const std::vector<int32_t>& tokens, const kv::CompressOptions& opts,
                                       const ProgressFn& progress, const std::atomic<bool>* cancel,
                                       const ReadOptions& read) {
  const uint64_t key = read_key(tokens, opts, read, ctx_->params());
  ReadResume resume;
  bool resuming = false;
  if (!read.checkpoint.empty() && ctx_->n_past() == 0) {
    try {
      std::string meta;
      const std::unique_ptr<Session> saved = load(model_, read.checkpoint, ctx_->params(), &meta);
      if (decode_checkpoint(meta, key, &resume) && saved->ctx_->params().kv == ctx_->params().kv) {
        ctx_->restore(saved->ctx_->cache().clone(), saved->ctx_->n_past());
        resuming = true;
      }
    } catch (const Error&) {
      // No checkpoint, or a damaged one: the read starts over.
    }
  }
  ChunkHook hook;
  auto last_save = std::chrono::steady_clock::now();
  if (!read.checkpoint.empty())
    hook = [&](int32_t, int32_t next_token, const ReadResume& at) {
      const auto now = std::chrono::steady_clock::now();
      if (std::chrono::duration<double>(now - last_save).count() < read.checkpoint_seconds) return;
      tokens_.assign(tokens.begin(), tokens.begin() + next_token);
      last_logits_.clear();
      try {
        save(read.checkpoint, encode_checkpoint(key, at));
        last_save = now;
      } catch (const Error&) {
        // A checkpoint that cannot be written costs only the resume.
      }
    };
  std::vector<float> logits;
  kv::CompressionStats stats;
  try {
    stats = ctx_->compress(tokens, opts, logits, progress, cancel, read, hook, resuming ? &resume : nullptr);
  } catch (...) {
    tokens_.clear();
    last_logits_.clear();
    throw;
  }
  if (!read.checkpoint.empty()) std::remove(read.checkpoint.c_str());
  tokens_ = tokens;
  last_logits_ = std::move(logits);
  return stats;
}

GenerateResult Session::generate(const GenerateParams& params, const TokenFn& on_token,
                                 const std::atomic<bool>* cancel) {
  if (last_logits_.empty()) fail("NO_PROMPT", "generate() needs a prefill first: there are no logits to sample from");
  const Vocab& vocab = model_->vocab();
  Sampler sampler(params.sampling, model_->hparams().n_vocab);
  Utf8Stream utf8;
  GenerateResult r;
  std::vector<float> logits;
  const auto t0 = std::chrono::steady_clock::now();
  r.stop_reason = "length";
  // The citations' watch: every entry held before the answer; the entries the answer appends are not in it.
  const int32_t before = ctx_->n_past();
  forward::AttentionWatch watch;
  if (params.collect_attention) watch = ctx_->watch_entries();
  int32_t watched = 0;  // tokens whose queries the watch saw
  for (int32_t i = 0; i < params.n; i++) {
    if (cancel && *cancel) {
      r.stop_reason = "cancelled";
      break;
    }
    const int32_t id = sampler.sample(last_logits_.data(), tokens_);
    r.tokens.push_back(id);
    const std::string piece = utf8.push(id < vocab.n_tokens() ? vocab.token_to_piece(id, false) : std::string());
    r.text += piece;
    if (on_token) on_token(id, piece);
    if (params.stop_at_eog && id < vocab.n_tokens() && vocab.is_eog(id)) {
      r.stop_reason = "eog";
      break;
    }
    if (ctx_->n_past() >= ctx_->n_ctx()) {
      r.stop_reason = "context";
      break;
    }
    // Feed the token back so the cache holds the whole answer for the next turn.
    try {
      ctx_->eval({id}, false, logits, nullptr, cancel, params.collect_attention ? &watch : nullptr);
      watched++;
    } catch (const Error& e) {
      if (e.code() != "CANCELLED") throw;
      r.stop_reason = "cancelled";
      break;
    }
    tokens_.push_back(id);
    last_logits_.swap(logits);
  }
  r.text += utf8.flush();
  if (params.collect_attention && watched > 0) {
    r.attention = ctx_->by_position(watch, before);
    const float per_query = 1.0f / (float(watched) * float(model_->hparams().n_head));
    for (std::vector<float>& row : r.attention)
      for (float& x : row) x *= per_query;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void Session::forget(int32_t from, int32_t to) {
  ctx_->forget(from, to);
  // Positions count the last n_past tokens (a re-based document holds more tokens than positions before them).
  const size_t offset = tokens_.size() - size_t(ctx_->n_past() + (to - from));
  tokens_.erase(tokens_.begin() + std::ptrdiff_t(offset + size_t(from)),
                tokens_.begin() + std::ptrdiff_t(offset + size_t(to)));
  last_logits_.clear();
}

int32_t Session::compress_span(int32_t from, int32_t to, double keep_ratio, const std::vector<int32_t>& window,
                               const std::atomic<bool>* cancel) {
  const int32_t before = ctx_->n_past();
  squeezed(from, before, ctx_->compress_span(from, to, keep_ratio, window, cancel));
  return ctx_->n_past();
}

int32_t Session::pack_span(int32_t from, int32_t to) {
  const int32_t before = ctx_->n_past();
  squeezed(from, before, ctx_->pack_span(from, to));
  return ctx_->n_past();
}

void Session::squeezed(int32_t from, int32_t before, int32_t after) {
  // Positions count the last n_past tokens (as in forget): the span keeps its last ones.
  const size_t offset = tokens_.size() - size_t(before);
  tokens_.erase(tokens_.begin() + std::ptrdiff_t(offset + size_t(from)),
                tokens_.begin() + std::ptrdiff_t(offset + size_t(from + before - after)));
  last_logits_.clear();
}

void Session::truncate(int32_t n) {
  const size_t dropped = size_t(ctx_->n_past() - std::max(n, 0));
  ctx_->truncate(n);
  tokens_.resize(tokens_.size() - dropped);
  last_logits_.clear();
}

}  // namespace folio
