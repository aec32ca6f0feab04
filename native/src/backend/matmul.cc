// Matrix products of quantized weights with float activations: the forward pass's entry to the blocked
// kernels (the driver and the kernels are in quant/: matmul.cc, gemm-*.cc).
#include "backend/cpu-ops.h"
#include "quant/matmul.h"
#include "quant/quant.h"

namespace folio::cpu {

namespace {

quant::MatrixRef matrix(const Weight& W) {
  quant::MatrixRef m;
  m.data = W.data;
  m.type = W.type;
  m.rows = W.rows;
  m.cols = W.cols;
  m.ldw = W.row_bytes;
  return m;
}

}  // namespace

void matmul(ThreadPool& pool, Scratch& s, const Weight& W, const float* X, int64_t n, float* Y,
            const std::atomic<bool>* stop) {
  quant::matmul(pool, matrix(W), X, n, Y, s.act, quant::best_isa(), quant::MatmulPath::Auto, stop);
}

void matmuls(ThreadPool& pool, Scratch& s, const float* X, int64_t n,
             std::initializer_list<backend::Backend::Product> products, const std::atomic<bool>* stop) {
  const quant::Isa isa = quant::best_isa();
  quant::ConvertedX cx;
  bool have = false;
  for (const backend::Backend::Product& p : products) {
    const quant::MatrixRef m = matrix(*p.W);
    if (n <= 0 || m.rows <= 0) continue;
    // the same bytes as each product converting X itself: the results are those of matmul
    if (!have || cx.type != quant::vec_dot_type(m.type) || cx.cols != m.cols)
      cx = quant::convert_activations(pool, m.type, X, n, m.cols, s.act, isa), have = true;
    quant::matmul_converted(pool, m, cx, p.y, isa, quant::MatmulPath::Auto, stop);
  }
}

}  // namespace folio::cpu
