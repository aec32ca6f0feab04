#include "session/session.h"

#include <chrono>

#include "core/error.h"
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

kv::CompressionStats Session::compress(const std::vector<int32_t>& tokens, const kv::CompressOptions& opts,
                                       const ProgressFn& progress, const std::atomic<bool>* cancel,
                                       const ReadOptions& read) {
  std::vector<float> logits;
  kv::CompressionStats stats = ctx_->compress(tokens, opts, logits, progress, cancel, read);
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
      ctx_->eval({id}, false, logits, nullptr, cancel);
    } catch (const Error& e) {
      if (e.code() != "CANCELLED") throw;
      r.stop_reason = "cancelled";
      break;
    }
    tokens_.push_back(id);
    last_logits_.swap(logits);
  }
  r.text += utf8.flush();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void Session::truncate(int32_t n) {
  const size_t dropped = size_t(ctx_->n_past() - std::max(n, 0));
  ctx_->truncate(n);
  tokens_.resize(tokens_.size() - dropped);
  last_logits_.clear();
}

}  // namespace folio
