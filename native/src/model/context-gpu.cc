// The forward pass on the GPU backend: the same steps as Context::forward (context.cc), each one an
// operation of the GPU table (backend/gpu-abi.h) on device buffers. The weights are uploaded once per
// model, the cache stays on the device, and a decode step uploads its token and position and downloads
// the logits, nothing else. Compression scores each layer on the device, downloads the scores (a few
// floats per entry), chooses what to keep with the same code as the CPU (kv::Compressor::plan_layer) and
// compacts on the device, so both backends keep the same entries for the same scores.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "backend/gpu-kv-cache.h"
#include "backend/gpu-weights.h"
#include "core/error.h"
#include "kv/compressor.h"
#include "model/context.h"

namespace folio {

struct Context::Gpu {
  const folio_gpu_api& api = gpu::require();
  std::shared_ptr<const gpu::Weights> w;
  gpu::KvCache cache;
  // Activations, grown as needed: x [n, E] the residual stream of the call; the others one chunk's.
  gpu::Buffer x, xb, q, k, v, att, ffa, ffb, qw, ids, pos, logits, attn, score;

  void run(int rc, const char* what) const { gpu::check(rc, what); }
  void matmul(const gpu::DeviceWeight& W, const float* in, int64_t m, float* out) const {
    run(api.matmul(W.data, W.type, W.rows, W.cols, W.ldw, in, m, out), "GPU matmul");
  }
};

void Context::GpuDeleter::operator()(Gpu* g) const { delete g; }

void Context::gpu_init() {
  gpu_.reset(new Gpu());
  const HParams& hp = model_.hparams();
  gpu_->w = gpu::Weights::of(model_);
  gpu_->cache = gpu::KvCache(hp.n_layer, hp.n_head_kv, hp.head_dim, hp.head_dim_v, params_.kv_type);
}

void Context::gpu_copy_from(const Context& other) {
  gpu_->cache = other.gpu_->cache.clone();
  host_stale_ = true;
}

void Context::gpu_restore() {
  gpu_->cache = gpu::KvCache::from_host(cache_);
  host_stale_ = false;
}

void Context::gpu_truncate(int32_t n) {
  gpu_->cache.truncate(n);
  host_stale_ = true;
}

const FlatKvCache& Context::cache() const {
  if (gpu_ && host_stale_) {
    cache_ = gpu_->cache.to_host();
    host_stale_ = false;
  }
  return cache_;
}

void Context::forward_gpu(const int32_t* tokens, int64_t n, bool all_logits, float* logits, const ProgressFn& progress,
                          const std::atomic<bool>* cancel, kv::Compressor* comp) {
  Gpu& g = *gpu_;
  const folio_gpu_api& api = g.api;
  const gpu::Weights& w = *g.w;
  const HParams& hp = model_.hparams();
  const int64_t E = hp.n_embd, F = hp.n_ff, C = std::min<int64_t>(params_.n_batch, n);
  const int64_t qwd = hp.q_width(), kw = hp.k_width(), vw = hp.v_width(), aw = int64_t(hp.n_head) * hp.head_dim_v;
  const int32_t p0 = n_past_;
  host_stale_ = true;
  auto fbuf = [](gpu::Buffer& b, int64_t count) -> float* {
    b.ensure(size_t(std::max<int64_t>(count, 1)) * sizeof(float));
    return b.as<float>();
  };
  float* x = fbuf(g.x, n * E);                           // [n, E]
  float* xb = fbuf(g.xb, C * std::max(E, aw));           // [C, max(E, n_head·head_dim_v)]
  float* q = fbuf(g.q, C * qwd);                         // [C, n_head·head_dim]
  float* k = fbuf(g.k, C * kw);                          // [C, n_kv·head_dim]
  float* v = fbuf(g.v, C * vw);                          // [C, n_kv·head_dim_v]
  float* att = fbuf(g.att, C * aw);                      // [C, n_head·head_dim_v]
  float* ffa = fbuf(g.ffa, C * F);                       // [C, F]
  float* ffb = fbuf(g.ffb, C * F);                       // [C, F]
  std::vector<int32_t> pos_host(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; t++) pos_host[size_t(t)] = p0 + int32_t(t);
  g.ids.ensure(size_t(n) * 4);
  g.pos.ensure(size_t(n) * 4);
  g.ids.upload(tokens, size_t(n) * 4);
  g.pos.upload(pos_host.data(), size_t(n) * 4);
  const int32_t* pos = g.pos.as<int32_t>();

  // token embeddings: x[t] = token_embd[tokens[t]]
  g.run(api.get_rows(w.tok_embd.data, w.tok_embd.type, E, w.tok_embd.ldw, g.ids.as<int32_t>(), n, x), "GPU embedding");

  const int32_t slack = comp ? 0 : std::max<int32_t>(FlatKvCache::kSpare, int32_t(n / 4));
  folio_gpu_rope rope{};
  rope.rope_dim = hp.rope_dim;
  rope.neox = hp.rope_type == RopeType::Neox;
  rope.base = hp.rope_base;
  rope.freq_scale = hp.rope_freq_scale;
  const float* rope_ff = w.rope_freqs ? w.rope_freqs.f32() : nullptr;
  const int32_t wlen = comp ? comp->window() : 0;
  const int32_t w_first = int32_t(n) - wlen;  // first window token
  float* qwin = comp ? fbuf(g.qw, int64_t(wlen) * qwd) : nullptr;  // [w, n_head·head_dim]
  int64_t reported = 0;
  auto check_cancel = [cancel] {
    if (cancel && cancel->load(std::memory_order_relaxed)) fail("CANCELLED", "cancelled");
  };
  for (int l = 0; l < hp.n_layer; l++) {
    const gpu::DeviceLayer& L = w.layers[size_t(l)];
    g.cache.reserve(l, int32_t(n), slack);
    for (int64_t c0 = 0; c0 < n; c0 += C) {
      check_cancel();
      const int64_t m = std::min(C, n - c0);
      float* xc = x + c0 * E;  // [m, E] this chunk's residual stream

      // attention block
      g.run(api.rms_norm(xc, L.attn_norm.f32(), xb, m, E, hp.rms_eps), "GPU rms_norm");
      g.matmul(L.wq, xb, m, q);
      g.matmul(L.wk, xb, m, k);
      g.matmul(L.wv, xb, m, v);
      if (hp.has_qkv_bias) {
        g.run(api.add_bias(q, L.bq.f32(), m, qwd), "GPU bias");
        g.run(api.add_bias(k, L.bk.f32(), m, kw), "GPU bias");
        g.run(api.add_bias(v, L.bv.f32(), m, vw), "GPU bias");
      }
      if (hp.has_qk_norm) {  // per-head RMSNorm: rows of head_dim
        g.run(api.rms_norm(q, L.q_norm.f32(), q, m * hp.n_head, hp.head_dim, hp.rms_eps), "GPU rms_norm");
        g.run(api.rms_norm(k, L.k_norm.f32(), k, m * hp.n_head_kv, hp.head_dim, hp.rms_eps), "GPU rms_norm");
      }
      g.run(api.rope(q, m, hp.n_head, hp.head_dim, pos + c0, &rope, rope_ff), "GPU rope");
      g.run(api.rope(k, m, hp.n_head_kv, hp.head_dim, pos + c0, &rope, rope_ff), "GPU rope");
      g.cache.append(l, k, v, pos + c0, pos_host.data() + c0, int32_t(m));
      const int64_t t_win = std::max<int64_t>(c0, w_first);  // keep the window's queries
      if (comp && t_win < c0 + m)
        g.run(api.copy(qwin + (t_win - w_first) * qwd, q + (t_win - c0) * qwd, size_t(c0 + m - t_win) * qwd * sizeof(float)),
              "GPU copy");
      const folio_gpu_kv_layer layer = g.cache.layer(l);
      g.run(api.attention(q, &layer, int32_t(m), hp.n_head, att), "GPU attention");
      g.matmul(L.wo, att, m, xb);  // [m, E]
      g.run(api.add(xc, xb, m * E), "GPU add");

      // feed-forward block
      g.run(api.rms_norm(xc, L.ffn_norm.f32(), xb, m, E, hp.rms_eps), "GPU rms_norm");
      g.matmul(L.w_gate, xb, m, ffa);  // [m, F]
      g.matmul(L.w_up, xb, m, ffb);    // [m, F]
      g.run(api.swiglu(ffa, ffb, ffa, m * F), "GPU swiglu");
      g.matmul(L.w_down, ffa, m, xb);  // [m, E]
      g.run(api.add(xc, xb, m * E), "GPU add");

      // Progress in tokens (a token is done when it has passed every layer), reported once the work is.
      const int64_t done = (int64_t(l) * n + c0 + m) / hp.n_layer;
      if (progress && done > reported) {
        g.run(api.synchronize(), "GPU forward");
        progress(reported = done, n);
      }
    }
    if (comp) compress_layer_gpu(comp, l, qwin, std::min<int32_t>(FlatKvCache::kSpare, params_.n_ctx - p0 - int32_t(n)));
  }
  n_past_ = p0 + int32_t(n);

  if (!logits) return;
  // output head, for every position or only the last, a chunk at a time
  float* lg = fbuf(g.logits, C * int64_t(hp.n_vocab));  // [C, n_vocab]
  for (int64_t c0 = all_logits ? 0 : n - 1; c0 < n; c0 += C) {
    const int64_t m = std::min(C, n - c0);
    g.run(api.rms_norm(x + c0 * E, w.output_norm.f32(), xb, m, E, hp.rms_eps), "GPU rms_norm");
    g.matmul(w.output, xb, m, lg);
    g.logits.download(logits + (all_logits ? c0 : 0) * hp.n_vocab, size_t(m) * size_t(hp.n_vocab) * sizeof(float));
    check_cancel();
  }
}

// Layer l of a compressing prefill on the device: window scores there, the choice on the host (the
// CPU's code, so both backends keep the same entries for the same scores), compaction there.
void Context::compress_layer_gpu(kv::Compressor* comp, int l, const float* qwin, int32_t spare) {
  Gpu& g = *gpu_;
  const HParams& hp = model_.hparams();
  const int Hk = hp.n_head_kv;
  const int32_t L = comp->prefix_tokens(), wlen = comp->window();
  const auto t0 = std::chrono::steady_clock::now();
  float* attn = [&] {
    g.attn.ensure(size_t(Hk) * size_t(L) * sizeof(float));
    return g.attn.as<float>();
  }();  // [Hk, L]
  float* score = [&] {
    g.score.ensure(size_t(Hk) * size_t(std::max(L - wlen, 1)) * sizeof(float));
    return g.score.as<float>();
  }();  // [Hk, L − w]
  const folio_gpu_kv_layer layer = g.cache.layer(l);
  g.run(g.api.window_scores(qwin, &layer, hp.n_head, L, wlen, comp->options().kernel, attn, score), "GPU window scores");
  kv::WindowScores ws;
  ws.attn.assign(size_t(Hk), std::vector<float>(size_t(L)));
  ws.score.assign(size_t(Hk), std::vector<float>(size_t(L - wlen)));
  for (int h = 0; h < Hk; h++) {
    g.attn.download(ws.attn[size_t(h)].data(), size_t(L) * sizeof(float), size_t(h) * size_t(L) * sizeof(float));
    if (L > wlen)
      g.score.download(ws.score[size_t(h)].data(), size_t(L - wlen) * sizeof(float),
                       size_t(h) * size_t(L - wlen) * sizeof(float));
  }
  // The window queries on the host too: the attention-loss measurement reads them.
  g.qw.download(comp->window_queries(), size_t(wlen) * size_t(hp.q_width()) * sizeof(float));
  const double ms_score = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  kv::EntryReader keys = [&](int h, float* out) { g.cache.read_k(l, h, L, out); };
  kv::EntryReader values = [&](int h, float* out) { g.cache.read_v(l, h, L, out); };
  const std::vector<std::vector<int32_t>> keep =
      comp->plan_layer(pool_, l, ws, ms_score, g.cache.k_entry_bytes() + g.cache.v_entry_bytes(), keys, values);
  const auto t1 = std::chrono::steady_clock::now();
  if (comp->budget().compress) g.cache.compact(l, keep, spare);
  comp->add_compact_time(l, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
}

}  // namespace folio
