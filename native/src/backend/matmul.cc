// Matrix products of quantized weights with float activations: the forward pass's entry to the blocked
// kernels (the driver and the kernels are in quant/: matmul.cc, gemm-*.cc).
#include "backend/cpu-ops.h"
#include "quant/matmul.h"
#include "quant/quant.h"

namespace folio::cpu {

void matmul(ThreadPool& pool, Scratch& s, const Weight& W, const float* X, int64_t n, float* Y,
            const std::atomic<bool>* stop) {
  quant::MatrixRef m;
  m.data = W.data;
  m.type = W.type;
  m.rows = W.rows;
  m.cols = W.cols;
  m.ldw = W.row_bytes;
  quant::matmul(pool, m, X, n, Y, s.act, quant::best_isa(), quant::MatmulPath::Auto, stop);
}

}  // namespace folio::cpu
