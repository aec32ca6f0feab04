#include "forward/forward.h"

#include <algorithm>

#include "forward/compress-layer.h"

namespace folio::forward {

backend::RopeParams layer_rope(const HParams& hp, int l) {
  backend::RopeParams rope;
  rope.rope_dim = hp.rope_dim;
  rope.neox = hp.rope_type == RopeType::Neox;
  rope.base = hp.is_swa_layer(l) ? hp.rope_base_swa : hp.rope_base;
  rope.freq_scale = hp.is_swa_layer(l) ? 1.0f : hp.rope_freq_scale;
  rope.mscale = hp.rope_attn_factor;
  return rope;
}

float* ForwardPass::floats(backend::Buffer& b, int64_t count) {
  b.ensure(be_, size_t(std::max<int64_t>(count, 1)) * sizeof(float));
  return b.as<float>();
}

// One forward pass over n tokens, layer by layer (the llama2.c shape: embed, then per layer an attention
// and a feed-forward block with residuals, then the output head). Inside a layer the tokens go through in
// chunks of n_batch, so that one chunk's activations are all that is held besides the residual stream.
void ForwardPass::run(const ModelWeights& w, backend::KvStore& kv, const int32_t* tokens, int64_t n, int32_t p0,
                      int32_t n_ctx, bool all_logits, float* logits, Control& ctl, kv::Compressor* comp,
                      AttentionWatch* watch, backend::Backend::Fold fold) {
  backend::Backend& be = be_;
  const HParams& hp = hp_;
  const int64_t E = hp.n_embd, F = std::max(hp.n_ff, hp.n_ff_exp), C = std::min<int64_t>(n_batch_, n);
  const int64_t QW = hp.q_width(), KW = hp.k_width(), VW = hp.v_width(), AW = int64_t(hp.n_head) * hp.head_dim_v;
  float* x = floats(x_, n * E);                  // [n, E] the residual stream
  float* xb = floats(xb_, C * std::max(E, AW));  // [C, max(E, n_head·head_dim_v)]
  float* q = floats(q_, C * QW);                 // [C, n_head·head_dim]
  float* k = floats(k_, C * KW);                 // [C, n_kv·head_dim]
  float* v = floats(v_, C * VW);                 // [C, n_kv·head_dim_v]
  float* att = floats(att_, C * AW);             // [C, n_head·head_dim_v]
  float* ffa = floats(ffa_, C * F);              // [C, F] (F: the widest feed-forward, dense or an expert's)
  float* ffb = floats(ffb_, C * F);              // [C, F]
  pos_host_.resize(size_t(n));
  for (int64_t t = 0; t < n; t++) pos_host_[size_t(t)] = p0 + int32_t(t);
  ids_.ensure(be, size_t(n) * 4);
  pos_.ensure(be, size_t(n) * 4);
  be.upload(ids_.get(), tokens, size_t(n) * 4);            // [n] token ids
  be.upload(pos_.get(), pos_host_.data(), size_t(n) * 4);  // [n] positions
  const int32_t* pos = pos_.as<int32_t>();

  // token embeddings: x[t] = token_embd[tokens[t]]
  be.get_rows(w.tok_embd, ids_.as<int32_t>(), n, x);
  if (hp.embd_scale != 1.0f) be.scale(x, hp.embd_scale, n * E);  // gemma3

  const bool query_stats = comp && comp->scorer() && comp->scorer()->query_stats;
  // Room in every head: for compression exactly the prefix; otherwise some slack for what comes next.
  const int32_t slack = comp ? 0 : std::max<int32_t>(FlatKvCache::kSpare, int32_t(n / 4));
  const Weight& rope_w = rope_factors(w, hp, n_ctx);
  const float* rope_ff = rope_w ? rope_w.f32() : nullptr;  // [rope_dim/2] or none
  const int32_t wlen = comp ? comp->window() : 0;
  const int32_t w_first = int32_t(n) - wlen;                         // the first window token
  float* qwin = comp ? floats(qwin_, int64_t(wlen) * QW) : nullptr;  // [w, n_head·head_dim] window queries
  for (int l = 0; l < hp.n_layer; l++) {
    const LayerWeights& L = w.layers[size_t(l)];
    const backend::RopeParams rope = layer_rope(hp, l);
    kv.reserve(l, int32_t(n), slack);
    for (int64_t c0 = 0; c0 < n; c0 += C) {
      ctl.check();
      const int64_t m = std::min(C, n - c0);
      float* xc = x + c0 * E;  // [m, E] this chunk's residual stream

      // attention block
      be.rms_norm(xc, L.attn_norm.f32(), xb, m, E, hp.rms_eps);  // xb [m, E]
      // q [m, n_head·head_dim], k [m, n_kv·head_dim], v [m, n_kv·head_dim_v]
      be.matmuls(xb, m, {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}});
      ctl.check();
      if (hp.has_qkv_bias) {
        be.add_bias(q, L.bq.f32(), m, QW);
        be.add_bias(k, L.bk.f32(), m, KW);
        be.add_bias(v, L.bv.f32(), m, VW);
      }
      if (hp.has_qk_norm) {  // per-head RMSNorm: rows of head_dim
        be.rms_norm(q, L.q_norm.f32(), q, m * hp.n_head, hp.head_dim, hp.rms_eps);
        be.rms_norm(k, L.k_norm.f32(), k, m * hp.n_head_kv, hp.head_dim, hp.rms_eps);
      }
      if (query_stats) observe_queries(*comp, be, l, q, m, comp->chunk_first() + int32_t(c0));  // before RoPE
      be.rope(q, m, hp.n_head, hp.head_dim, pos + c0, rope, rope_ff);
      be.rope(k, m, hp.n_head_kv, hp.head_dim, pos + c0, rope, rope_ff);
      if (hp.q_scale != 1.0f) be.scale(q, hp.q_scale, m * QW);          // Gemma 3 27B's attention scale
      kv.append(l, k, v, pos + c0, pos_host_.data() + c0, int32_t(m));  // every head grows by m entries
      if (watch) be.watch_attention(q, kv, l, m, hp.n_head, hp.head_dim, fold, (*watch)[size_t(l)]);
      const int64_t t_win = std::max<int64_t>(c0, w_first);  // keep the window's queries for the compressor
      if (comp && t_win < c0 + m)
        be.copy(qwin + (t_win - w_first) * QW, q + (t_win - c0) * QW,
                size_t(c0 + m - t_win) * size_t(QW) * sizeof(float));
      be.attention(q, kv, l, m, hp.n_head, hp.layer_window(l), att);  // att [m, n_head·head_dim_v]
      ctl.check();
      be.matmul(L.wo, att, m, xb);  // xb [m, E]
      ctl.check();
      if (hp.has_post_norms) be.rms_norm(xb, L.attn_post_norm.f32(), xb, m, E, hp.rms_eps);
      be.add(xc, xb, m * E);

      // feed-forward block
      be.rms_norm(xc, L.ffn_norm.f32(), xb, m, E, hp.rms_eps);  // xb [m, E]
      if (hp.n_expert > 0) {  // qwen3moe: the routed experts, added to the residual stream
        moe_ffn(be, hp, L, xb, m, xc, ffa, ffb, moe_, ctl);
      } else {
        be.matmuls(xb, m, {{&L.w_gate, ffa}, {&L.w_up, ffb}});  // ffa, ffb [m, F]
        ctl.check();
        if (hp.gelu_ffn) be.geglu(ffa, ffb, ffa, m, F);  // ffa [m, F]
        else be.swiglu(ffa, ffb, ffa, m, F);
        be.matmul(L.w_down, ffa, m, xb);  // xb [m, E]
        ctl.check();
        if (hp.has_post_norms) be.rms_norm(xb, L.ffn_post_norm.f32(), xb, m, E, hp.rms_eps);
        be.add(xc, xb, m * E);
      }

      // Progress in tokens: a token is done when it has passed every layer.
      ctl.tokens((int64_t(l) * n + c0 + m) / hp.n_layer, n);
    }
    if (comp)
      compress_layer(*comp, be, kv, pool_, l, qwin, std::min<int32_t>(FlatKvCache::kSpare, n_ctx - p0 - int32_t(n)));
  }

  if (!logits) return;
  // output head, for every position or only the last, a chunk at a time; on a host backend straight into
  // the caller's logits
  float* lg = be.host_memory() ? nullptr : floats(logits_, C * int64_t(hp.n_vocab));  // [C, n_vocab]
  for (int64_t c0 = all_logits ? 0 : n - 1; c0 < n; c0 += C) {
    const int64_t m = std::min(C, n - c0);
    float* out = logits + (all_logits ? c0 : 0) * hp.n_vocab;  // [m, n_vocab] on the host
    be.rms_norm(x + c0 * E, w.output_norm.f32(), xb, m, E, hp.rms_eps);
    be.matmul(w.output, xb, m, lg ? lg : out);
    if (lg) be.download(out, lg, size_t(m) * size_t(hp.n_vocab) * sizeof(float));
    ctl.check();
  }
}

}  // namespace folio::forward
