#include "model/context.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "quant/quant.h"

namespace folio {

Context::Context(const Model& model, const ContextParams& params)
    : model_(model), params_(params), pool_(params.n_threads) {
  const HParams& hp = model.hparams();
  int32_t n_ctx = params.n_ctx > 0 ? params.n_ctx : std::min<int32_t>(hp.n_ctx_train, 4096);
  if (n_ctx > hp.n_ctx_train)
    fail("CONTEXT_TOO_LONG", strfmt("a context of %d tokens exceeds the model's context length of %d tokens", n_ctx,
                                    hp.n_ctx_train));
  if (params_.n_batch <= 0) params_.n_batch = 512;
  cache_.init(hp.n_layer, n_ctx, hp.k_width(), hp.v_width());
}

void Context::reserve(int64_t n) {
  const HParams& hp = model_.hparams();
  auto grow = [n](std::vector<float>& v, int64_t width) {
    if (v.size() < size_t(n * width)) v.resize(size_t(n * width));
  };
  grow(x_, hp.n_embd);
  grow(xb_, std::max<int64_t>(hp.n_embd, int64_t(hp.n_head) * hp.head_dim_v));
  grow(q_, hp.q_width());
  grow(k_, hp.k_width());
  grow(v_, hp.v_width());
  grow(att_, int64_t(hp.n_head) * hp.head_dim_v);
  grow(ffa_, hp.n_ff);
  grow(ffb_, hp.n_ff);
  if (pos_.size() < size_t(n)) pos_.resize(size_t(n));
}

void Context::truncate(int32_t n) {
  if (n < 0 || n > n_past_) fail("INVALID_ARGUMENT", strfmt("cannot truncate to %d tokens: the context holds %d", n, n_past_));
  n_past_ = n;
}

void Context::eval(const std::vector<int32_t>& tokens, bool all_logits, std::vector<float>& logits,
                   const ProgressFn& progress, const std::atomic<bool>* cancel) {
  const HParams& hp = model_.hparams();
  const int64_t n = int64_t(tokens.size());
  if (n == 0) fail("INVALID_ARGUMENT", "nothing to evaluate: the token list is empty");
  if (n_past_ + n > cache_.n_ctx)
    fail("CONTEXT_FULL", strfmt("%lld new tokens do not fit: the context holds %d of %d tokens", (long long)n, n_past_,
                                cache_.n_ctx));
  for (int32_t t : tokens)
    if (t < 0 || t >= hp.n_vocab)
      fail("INVALID_TOKEN", strfmt("token id %d is outside the vocabulary (0 to %d)", t, hp.n_vocab - 1));
  logits.assign(size_t(all_logits ? n : 1) * size_t(hp.n_vocab), 0.0f);
  const int32_t start = n_past_;
  try {
    for (int64_t done = 0; done < n;) {
      const int64_t m = std::min<int64_t>(params_.n_batch, n - done);
      const bool last = done + m == n;
      float* out = all_logits ? logits.data() + size_t(done) * size_t(hp.n_vocab) : (last ? logits.data() : nullptr);
      forward(tokens.data() + done, m, all_logits, out, cancel);
      done += m;
      if (progress) progress(done, n);
    }
  } catch (...) {
    n_past_ = start;  // nothing half-done stays in the cache
    throw;
  }
}

// One forward step over n tokens at positions n_past_ .. n_past_ + n - 1 (the llama2.c shape: embed, then
// per layer attention and feed-forward blocks with residuals, then the output head).
void Context::forward(const int32_t* tokens, int64_t n, bool all_logits, float* logits,
                      const std::atomic<bool>* cancel) {
  const HParams& hp = model_.hparams();
  const ModelWeights& w = model_.weights();
  const int64_t E = hp.n_embd, F = hp.n_ff;
  const int32_t p0 = n_past_;
  reserve(n);
  float* x = x_.data();    // [n, E] the residual stream
  float* xb = xb_.data();  // [n, max(E, att_w)]
  for (int64_t t = 0; t < n; t++) pos_[size_t(t)] = p0 + int32_t(t);

  // token embeddings: x[t] = token_embd[tokens[t]]
  const quant::Kernels& ek = quant::kernels(w.tok_embd.type);
  pool_.parallel_for(n, [&](int64_t t, int) { ek.dequantize_row(w.tok_embd.row(tokens[t]), x + t * E, E); });

  const float* rope_ff = w.rope_freqs ? reinterpret_cast<const float*>(w.rope_freqs.data) : nullptr;
  for (int l = 0; l < hp.n_layer; l++) {
    if (cancel && cancel->load(std::memory_order_relaxed)) fail("CANCELLED", "cancelled");
    const LayerWeights& L = w.layers[size_t(l)];

    // attention block
    cpu::rms_norm(pool_, x, L.attn_norm, xb, n, E, hp.rms_eps);
    cpu::matmul(pool_, scratch_, L.wq, xb, n, q_.data());  // [n, n_head·head_dim]
    cpu::matmul(pool_, scratch_, L.wk, xb, n, k_.data());  // [n, n_kv·head_dim]
    cpu::matmul(pool_, scratch_, L.wv, xb, n, v_.data());  // [n, n_kv·head_dim_v]
    if (hp.has_qkv_bias) {
      cpu::add_bias(q_.data(), L.bq, n, hp.q_width());
      cpu::add_bias(k_.data(), L.bk, n, hp.k_width());
      cpu::add_bias(v_.data(), L.bv, n, hp.v_width());
    }
    if (hp.has_qk_norm) {  // per-head RMSNorm: rows of head_dim
      cpu::rms_norm(pool_, q_.data(), L.q_norm, q_.data(), n * hp.n_head, hp.head_dim, hp.rms_eps);
      cpu::rms_norm(pool_, k_.data(), L.k_norm, k_.data(), n * hp.n_head_kv, hp.head_dim, hp.rms_eps);
    }
    cpu::rope(pool_, q_.data(), n, hp.n_head, hp.head_dim, pos_.data(), hp, rope_ff);
    cpu::rope(pool_, k_.data(), n, hp.n_head_kv, hp.head_dim, pos_.data(), hp, rope_ff);
    std::memcpy(cache_.k_row(l, p0), k_.data(), size_t(n * hp.k_width()) * sizeof(float));
    std::memcpy(cache_.v_row(l, p0), v_.data(), size_t(n * hp.v_width()) * sizeof(float));
    cpu::attention(pool_, scratch_, q_.data(), cache_.k_row(l, 0), cache_.v_row(l, 0), att_.data(), n, p0, hp);
    cpu::matmul(pool_, scratch_, L.wo, att_.data(), n, xb);  // [n, E]
    for (int64_t i = 0; i < n * E; i++) x[i] += xb[i];

    // feed-forward block
    cpu::rms_norm(pool_, x, L.ffn_norm, xb, n, E, hp.rms_eps);
    cpu::matmul(pool_, scratch_, L.w_gate, xb, n, ffa_.data());  // [n, F]
    cpu::matmul(pool_, scratch_, L.w_up, xb, n, ffb_.data());    // [n, F]
    cpu::swiglu(pool_, ffa_.data(), ffb_.data(), ffa_.data(), n, F);
    cpu::matmul(pool_, scratch_, L.w_down, ffa_.data(), n, xb);  // [n, E]
    for (int64_t i = 0; i < n * E; i++) x[i] += xb[i];
  }
  n_past_ = p0 + int32_t(n);

  if (!logits) return;
  // output head, for every position or only the last
  const int64_t first = all_logits ? 0 : n - 1, m = n - first;
  cpu::rms_norm(pool_, x + first * E, w.output_norm, xb, m, E, hp.rms_eps);
  cpu::matmul(pool_, scratch_, w.output, xb, m, logits);
}

}  // namespace folio
