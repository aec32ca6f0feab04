#include "model/context.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "kv/compressor.h"
#include "quant/quant.h"

namespace folio {

Context::Context(const Model& model, const ContextParams& params) : model_(model), params_(params), pool_(params.n_threads) {
  const HParams& hp = model.hparams();
  if (params_.n_ctx <= 0) params_.n_ctx = std::min<int32_t>(hp.n_ctx_train, 4096);
  if (params_.n_ctx > hp.n_ctx_train)
    fail("CONTEXT_TOO_LONG", strfmt("a context of %d tokens exceeds the model's context length of %d tokens",
                                    params_.n_ctx, hp.n_ctx_train));
  if (params_.n_batch <= 0) params_.n_batch = 512;
  cache_ = FlatKvCache(hp.n_layer, hp.n_head_kv, hp.head_dim, hp.head_dim_v, params_.kv_type);
  if (params_.backend == Backend::Cuda) {
    if (params_.reference_attention) fail("INVALID_ARGUMENT", "the reference attention runs on the CPU backend only");
    gpu_init();
  }
}

const char* backend_name(Backend b) { return b == Backend::Cuda ? "cuda" : "cpu"; }

std::unique_ptr<Context> Context::fork() const {
  auto c = std::make_unique<Context>(model_, params_);
  if (gpu_) c->gpu_copy_from(*this);
  else c->cache_ = cache_.clone();
  c->n_past_ = n_past_;
  return c;
}

void Context::restore(FlatKvCache cache, int32_t n_past) {
  cache_ = std::move(cache);
  n_past_ = n_past;
  if (gpu_) gpu_restore();
}

void Context::reserve(int64_t n_tokens, int64_t chunk) {
  const HParams& hp = model_.hparams();
  auto grow = [](std::vector<float>& v, int64_t n) {
    if (v.size() < size_t(n)) v.resize(size_t(n));
  };
  grow(x_, n_tokens * hp.n_embd);
  grow(xb_, chunk * std::max<int64_t>(hp.n_embd, int64_t(hp.n_head) * hp.head_dim_v));
  grow(q_, chunk * hp.q_width());
  grow(k_, chunk * hp.k_width());
  grow(v_, chunk * hp.v_width());
  grow(att_, chunk * int64_t(hp.n_head) * hp.head_dim_v);
  grow(ffa_, chunk * hp.n_ff);
  grow(ffb_, chunk * hp.n_ff);
  if (pos_.size() < size_t(n_tokens)) pos_.resize(size_t(n_tokens));
}

void Context::truncate(int32_t n) {
  if (n < 0 || n > n_past_) fail("INVALID_ARGUMENT", strfmt("cannot truncate to %d tokens: the context holds %d", n, n_past_));
  if (gpu_) gpu_truncate(n);
  else cache_.truncate(n);
  n_past_ = n;
}

void Context::check_tokens(const std::vector<int32_t>& tokens) const {
  const HParams& hp = model_.hparams();
  const int64_t n = int64_t(tokens.size());
  if (n == 0) fail("INVALID_ARGUMENT", "nothing to evaluate: the token list is empty");
  if (n_past_ + n > params_.n_ctx)
    fail("CONTEXT_FULL", strfmt("%lld new tokens do not fit: the context holds %d of %d tokens", (long long)n, n_past_,
                                params_.n_ctx));
  for (int32_t t : tokens)
    if (t < 0 || t >= hp.n_vocab)
      fail("INVALID_TOKEN", strfmt("token id %d is outside the vocabulary (0 to %d)", t, hp.n_vocab - 1));
}

void Context::eval(const std::vector<int32_t>& tokens, bool all_logits, std::vector<float>& logits,
                   const ProgressFn& progress, const std::atomic<bool>* cancel) {
  check_tokens(tokens);
  const int64_t n = int64_t(tokens.size());
  logits.assign(size_t(all_logits ? n : 1) * size_t(model_.hparams().n_vocab), 0.0f);
  const int32_t start = n_past_;
  try {
    forward(tokens.data(), n, all_logits, logits.data(), progress, cancel, nullptr);
  } catch (...) {
    truncate(start);  // nothing half-done stays in the cache
    throw;
  }
}

kv::CompressionStats Context::compress(const std::vector<int32_t>& tokens, const kv::CompressOptions& opts,
                                       std::vector<float>& logits, const ProgressFn& progress,
                                       const std::atomic<bool>* cancel) {
  if (n_past_ != 0)
    fail("NOT_EMPTY", "compression reads the whole prefix in one prefill: start from an empty session");
  kv::validate(opts);
  check_tokens(tokens);
  const HParams& hp = model_.hparams();
  kv::WindowShape shape;
  shape.n_head = hp.n_head;
  shape.n_head_kv = hp.n_head_kv;
  shape.head_dim = hp.head_dim;
  shape.head_dim_v = hp.head_dim_v;
  shape.L = int32_t(tokens.size());
  kv::Compressor comp(opts, shape, hp.n_layer, cache_.k_entry_bytes(), cache_.v_entry_bytes(), kv_type_name(cache_.type()));
  logits.assign(size_t(hp.n_vocab), 0.0f);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    forward(tokens.data(), int64_t(tokens.size()), false, logits.data(), progress, cancel, &comp);
  } catch (...) {
    truncate(0);
    throw;
  }
  comp.stats().ms_prefill = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return comp.stats();
}

// One forward pass over n tokens at positions n_past_ .. n_past_ + n − 1, layer by layer (the llama2.c
// shape: embed, then per layer an attention and a feed-forward block with residuals, then the output
// head). Inside a layer the tokens go through in chunks of n_batch; with a compressor, each layer is
// compressed as soon as all tokens have passed it.
void Context::forward(const int32_t* tokens, int64_t n, bool all_logits, float* logits, const ProgressFn& progress,
                      const std::atomic<bool>* cancel, kv::Compressor* comp) {
  if (gpu_) return forward_gpu(tokens, n, all_logits, logits, progress, cancel, comp);
  const HParams& hp = model_.hparams();
  const ModelWeights& w = model_.cpu_weights(pool_);  // the first pass on the CPU repacks (in its job)
  const int64_t E = hp.n_embd, F = hp.n_ff, C = std::min<int64_t>(params_.n_batch, n);
  const int32_t p0 = n_past_;
  reserve(n, C);
  float* x = x_.data();    // [n, E]
  float* xb = xb_.data();  // [C, max(E, n_head·head_dim_v)]
  for (int64_t t = 0; t < n; t++) pos_[size_t(t)] = p0 + int32_t(t);

  // token embeddings: x[t] = token_embd[tokens[t]]
  const quant::Kernels& ek = quant::kernels(w.tok_embd.type);
  pool_.parallel_for(n, [&](int64_t t, int) { ek.dequantize_row(w.tok_embd.row(tokens[t]), x + t * E, E); });

  // Room in every head: for compression exactly the prefix; otherwise some slack for what comes next.
  const int32_t slack = comp ? 0 : std::max<int32_t>(FlatKvCache::kSpare, int32_t(n / 4));
  const float* rope_ff = w.rope_freqs ? reinterpret_cast<const float*>(w.rope_freqs.data) : nullptr;
  const int32_t w_first = comp ? int32_t(n) - comp->window() : int32_t(n);  // first window token
  int64_t reported = 0;
  // Cancellation is checked between the operations of a chunk; the matrix products and the attention skip
  // their remaining blocks once it is set, so it takes effect within one block of work.
  auto check_cancel = [cancel] {
    if (cancel && cancel->load(std::memory_order_relaxed)) fail("CANCELLED", "cancelled");
  };
  for (int l = 0; l < hp.n_layer; l++) {
    const LayerWeights& L = w.layers[size_t(l)];
    cache_.reserve(l, int32_t(n), slack);
    for (int64_t c0 = 0; c0 < n; c0 += C) {
      check_cancel();
      const int64_t m = std::min(C, n - c0);
      float* xc = x + c0 * E;  // [m, E] this chunk's residual stream

      // attention block
      cpu::rms_norm(pool_, xc, L.attn_norm, xb, m, E, hp.rms_eps);
      cpu::matmul(pool_, scratch_, L.wq, xb, m, q_.data(), cancel);  // [m, n_head·head_dim]
      cpu::matmul(pool_, scratch_, L.wk, xb, m, k_.data(), cancel);  // [m, n_kv·head_dim]
      cpu::matmul(pool_, scratch_, L.wv, xb, m, v_.data(), cancel);  // [m, n_kv·head_dim_v]
      check_cancel();
      if (hp.has_qkv_bias) {
        cpu::add_bias(q_.data(), L.bq, m, hp.q_width());
        cpu::add_bias(k_.data(), L.bk, m, hp.k_width());
        cpu::add_bias(v_.data(), L.bv, m, hp.v_width());
      }
      if (hp.has_qk_norm) {  // per-head RMSNorm: rows of head_dim
        cpu::rms_norm(pool_, q_.data(), L.q_norm, q_.data(), m * hp.n_head, hp.head_dim, hp.rms_eps);
        cpu::rms_norm(pool_, k_.data(), L.k_norm, k_.data(), m * hp.n_head_kv, hp.head_dim, hp.rms_eps);
      }
      cpu::rope(pool_, q_.data(), m, hp.n_head, hp.head_dim, pos_.data() + c0, hp, rope_ff);
      cpu::rope(pool_, k_.data(), m, hp.n_head_kv, hp.head_dim, pos_.data() + c0, hp, rope_ff);
      cache_.append(l, k_.data(), v_.data(), pos_.data() + c0, int32_t(m));
      for (int64_t t = std::max<int64_t>(c0, w_first); t < c0 + m; t++)  // keep the window's queries
        std::memcpy(comp->window_queries() + (t - w_first) * hp.q_width(), q_.data() + (t - c0) * hp.q_width(),
                    size_t(hp.q_width()) * sizeof(float));
      if (params_.reference_attention) cpu::attention_reference(pool_, scratch_, q_.data(), cache_, l, m, att_.data(), hp);
      else cpu::attention(pool_, scratch_, q_.data(), cache_, l, m, att_.data(), hp, cancel);
      check_cancel();
      cpu::matmul(pool_, scratch_, L.wo, att_.data(), m, xb, cancel);  // [m, E]
      check_cancel();
      for (int64_t i = 0; i < m * E; i++) xc[i] += xb[i];

      // feed-forward block
      cpu::rms_norm(pool_, xc, L.ffn_norm, xb, m, E, hp.rms_eps);
      cpu::matmul(pool_, scratch_, L.w_gate, xb, m, ffa_.data(), cancel);  // [m, F]
      cpu::matmul(pool_, scratch_, L.w_up, xb, m, ffb_.data(), cancel);    // [m, F]
      check_cancel();
      cpu::swiglu(pool_, ffa_.data(), ffb_.data(), ffa_.data(), m, F);
      cpu::matmul(pool_, scratch_, L.w_down, ffa_.data(), m, xb, cancel);  // [m, E]
      check_cancel();
      for (int64_t i = 0; i < m * E; i++) xc[i] += xb[i];

      // Progress in tokens: a token is done when it has passed every layer.
      const int64_t done = (int64_t(l) * n + c0 + m) / hp.n_layer;
      if (progress && done > reported) progress(reported = done, n);
    }
    if (comp) comp->compress_layer(pool_, cache_, l, std::min<int32_t>(FlatKvCache::kSpare, params_.n_ctx - p0 - int32_t(n)));
  }
  n_past_ = p0 + int32_t(n);

  if (!logits) return;
  // output head, for every position or only the last, a chunk at a time
  for (int64_t c0 = all_logits ? 0 : n - 1; c0 < n; c0 += C) {
    const int64_t m = std::min(C, n - c0);
    cpu::rms_norm(pool_, x + c0 * E, w.output_norm, xb, m, E, hp.rms_eps);
    cpu::matmul(pool_, scratch_, w.output, xb, m, logits + (all_logits ? c0 : 0) * hp.n_vocab, cancel);
    check_cancel();
  }
}

}  // namespace folio
