#include "backend/cpu-ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/quant.h"

namespace folio::cpu {

float* Scratch::thread_buffer(int thread, size_t n) {
  if (per_thread.size() <= size_t(thread)) per_thread.resize(size_t(thread) + 1);
  auto& b = per_thread[size_t(thread)];
  if (b.size() < n) b.resize(n);
  return b.data();
}

void rms_norm(ThreadPool& pool, const float* x, const Weight& w, float* y, int64_t n, int64_t width, float eps) {
  const float* g = reinterpret_cast<const float*>(w.data);
  pool.parallel_for(n, [&](int64_t t, int) {
    const float* xr = x + t * width;
    float* yr = y + t * width;
    double sum = 0;  // as ggml: the sum of squares in double
    for (int64_t i = 0; i < width; i++) sum += double(xr[i]) * double(xr[i]);
    const float scale = 1.0f / std::sqrt(float(sum / double(width)) + eps);
    for (int64_t i = 0; i < width; i++) yr[i] = xr[i] * scale * g[i];
  });
}

void matmul(ThreadPool& pool, Scratch& s, const Weight& W, const float* X, int64_t n, float* Y) {
  const quant::Kernels& wk = quant::kernels(W.type);
  const TensorType act_type = quant::vec_dot_type(W.type);
  const void* act = X;
  size_t act_row = size_t(W.cols) * sizeof(float);
  if (act_type != TensorType::F32) {
    // Convert every input row once; all output rows reuse it.
    const quant::Kernels& ak = quant::kernels(act_type);
    act_row = row_bytes(act_type, W.cols);
    if (s.act.size() < act_row * size_t(n)) s.act.resize(act_row * size_t(n));
    uint8_t* dst = s.act.data();
    pool.parallel_for(n, [&](int64_t t, int) { ak.quantize_row(X + t * W.cols, dst + size_t(t) * act_row, W.cols); });
    act = dst;
  }
  const uint8_t* a = static_cast<const uint8_t*>(act);
  constexpr int64_t kRowsPerTask = 16;
  const int64_t tasks = (W.rows + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(tasks, [&](int64_t task, int) {
    const int64_t r0 = task * kRowsPerTask, r1 = std::min(W.rows, r0 + kRowsPerTask);
    for (int64_t t = 0; t < n; t++) {
      const uint8_t* xr = a + size_t(t) * act_row;
      float* yr = Y + t * W.rows;
      for (int64_t r = r0; r < r1; r++) yr[r] = wk.vec_dot(W.cols, W.row(r), xr);
    }
  });
}

void add_bias(float* x, const Weight& b, int64_t n, int64_t width) {
  const float* bb = reinterpret_cast<const float*>(b.data);
  for (int64_t t = 0; t < n; t++)
    for (int64_t i = 0; i < width; i++) x[t * width + i] += bb[i];
}

void rope(ThreadPool& pool, float* x, int64_t n, int n_heads, int head_dim, const int32_t* pos, const HParams& hp,
          const float* freq_factors) {
  const int rd = hp.rope_dim;
  const float theta_scale = std::pow(hp.rope_base, -2.0f / float(rd));
  const bool neox = hp.rope_type == RopeType::Neox;
  pool.parallel_for(n, [&](int64_t t, int) {
    // The angle of pair i is pos · base^(−2i/rope_dim) (÷ the pair's frequency factor, × the linear scale);
    // the powers are built by repeated multiplication in float, as ggml does, so angles agree bit for bit.
    float cs[2 * 512];
    float theta = float(pos[t]);
    for (int i = 0; i < rd / 2; i++) {
      const float ff = freq_factors ? freq_factors[i] : 1.0f;
      const float th = hp.rope_freq_scale * (theta / ff);
      cs[2 * i] = std::cos(th);
      cs[2 * i + 1] = std::sin(th);
      theta *= theta_scale;
    }
    for (int h = 0; h < n_heads; h++) {
      float* v = x + t * int64_t(n_heads) * head_dim + int64_t(h) * head_dim;
      for (int i = 0; i < rd / 2; i++) {
        const int a = neox ? i : 2 * i, b = neox ? i + rd / 2 : 2 * i + 1;
        const float c = cs[2 * i], sn = cs[2 * i + 1];
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * c - x1 * sn;
        v[b] = x0 * sn + x1 * c;
      }
    }
  });
}

void swiglu(ThreadPool& pool, const float* g, const float* u, float* h, int64_t n, int64_t width) {
  pool.parallel_for(n, [&](int64_t t, int) {
    for (int64_t i = t * width, e = i + width; i < e; i++) {
      const float gi = g[i];
      h[i] = gi / (1.0f + std::exp(-gi)) * u[i];
    }
  });
}

void attention(ThreadPool& pool, Scratch& s, const float* q, const float* K, const float* V, float* out, int64_t n,
               int32_t p0, const HParams& hp) {
  const int H = hp.n_head, G = hp.n_gqa(), D = hp.head_dim, Dv = hp.head_dim_v;
  const int64_t qw = hp.q_width(), kw = hp.k_width(), vw = hp.v_width(), ow = int64_t(H) * Dv;
  const float scale = 1.0f / std::sqrt(float(D));
  const size_t n_keys_max = size_t(p0 + n);
  for (int th = 0; th < pool.size(); th++) s.thread_buffer(th, n_keys_max);
  pool.parallel_for(n * H, [&](int64_t item, int thread) {
    const int64_t t = item / H;
    const int h = int(item % H), kvh = h / G;
    const int64_t n_keys = p0 + t + 1;
    const float* qr = q + t * qw + int64_t(h) * D;
    float* sc = s.per_thread[size_t(thread)].data();
    float mx = -INFINITY;
    for (int64_t j = 0; j < n_keys; j++) {
      const float* kr = K + j * kw + int64_t(kvh) * D;
      float dot = 0;
      for (int d = 0; d < D; d++) dot += qr[d] * kr[d];
      sc[j] = dot * scale;
      mx = std::max(mx, sc[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < n_keys; j++) {
      sc[j] = std::exp(sc[j] - mx);
      sum += sc[j];
    }
    const float inv = float(1.0 / sum);
    float* o = out + t * ow + int64_t(h) * Dv;
    std::fill(o, o + Dv, 0.0f);
    for (int64_t j = 0; j < n_keys; j++) {
      const float p = sc[j] * inv;
      const float* vr = V + j * vw + int64_t(kvh) * Dv;
      for (int d = 0; d < Dv; d++) o[d] += p * vr[d];
    }
  });
}

}  // namespace folio::cpu
