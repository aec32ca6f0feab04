// Matrix products of quantized weights with float activations.
#include <algorithm>

#include "backend/cpu-ops.h"
#include "quant/quant.h"

namespace folio::cpu {

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

}  // namespace folio::cpu
