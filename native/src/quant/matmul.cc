// The matrix-product driver: activation conversion, blocking and the split over threads. The kernels
// themselves are per ISA (gemm-*.cc, and the vec_dot kernels).
#include "quant/matmul.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "quant/gemm.h"
#include "quant/repack.h"

namespace folio::quant {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Below this many tokens the blocked kernels do not pay for unpacking weights into tiles: vec_dot reads
// every weight block once per token straight from the matrix.
constexpr int64_t kGemmMinTokens = 4;

// Units (rows, or groups of a repacked layout) per step of a matrix-vector product (parallel_ranges): a
// quarter of a thread's share of the weights, between 32 KiB and 256 KiB. Long steps stream faster when
// another job shares the cores (on 2 cores of an AMD EPYC Zen 4, 15-25% more GB/s than 32 KiB steps, every
// type; no difference on the quiet machine: docs/benchmarks-log.md); a few steps per thread keep the stealing
// at the end even on the small k and v matrices, and cancellation fine-grained.
int64_t gemv_units_per_step(const MatrixRef& W, int64_t group, int threads) {
  const size_t unit = std::max<size_t>(1, W.ldw * size_t(group));
  const size_t share = W.ldw * size_t(W.rows) / (size_t(std::max(threads, 1)) * 4);
  const size_t bytes = std::clamp<size_t>(share, 32u << 10, 256u << 10);
  return std::max<int64_t>(std::max<int64_t>(1, 4 / group), int64_t((bytes + unit - 1) / unit));
}

}  // namespace

ConvertedX convert_activations(ThreadPool& pool, TensorType weight_type, const float* X, int64_t n, int64_t cols,
                               std::vector<uint8_t>& act, Isa isa) {
  static std::atomic<uint64_t> next_id{1};
  ConvertedX c;
  c.type = vec_dot_type(weight_type), c.n = n, c.cols = cols;
  c.id = next_id.fetch_add(1, std::memory_order_relaxed);
  if (c.type == TensorType::F32) {  // used in place
    c.ld = size_t(cols) * sizeof(float);
    c.data = reinterpret_cast<const uint8_t*>(X);
    return c;
  }
  const Kernels& ak = kernels(c.type, isa);
  c.ld = row_bytes(c.type, cols);
  const size_t need = c.ld * size_t(n);
  if (act.size() < need) act.resize(need);
  uint8_t* dst = act.data();
  const size_t ld = c.ld;
  pool.parallel_for(n, [&](int64_t t, int) { ak.quantize_row(X + t * cols, dst + size_t(t) * ld, cols); });
  c.data = dst;
  return c;
}

void matmul_reference(ThreadPool& pool, const MatrixRef& W, const float* X, int64_t n, float* Y,
                      std::vector<uint8_t>& act, Isa isa) {
  if (n <= 0 || W.rows <= 0) return;
  const Kernels& wk = kernels(W.type, isa);
  if (!wk.vec_dot) fail("UNSUPPORTED_TYPE", strfmt("no dot product for %s", type_name(W.type)));
  const ConvertedX cx = convert_activations(pool, W.type, X, n, W.cols, act, isa);
  const uint8_t* a = cx.data;
  const size_t ldx = cx.ld;
  pool.parallel_for(
      W.rows,
      [&](int64_t r, int) {
        for (int64_t t = 0; t < n; t++)
          Y[t * W.rows + r] = wk.vec_dot(W.cols, W.data + size_t(r) * W.ldw, a + size_t(t) * ldx);
      },
      16);
}

void matmul(ThreadPool& pool, const MatrixRef& W, const float* X, int64_t n, float* Y, std::vector<uint8_t>& act,
            Isa isa, MatmulPath path, const std::atomic<bool>* stop) {
  if (n <= 0 || W.rows <= 0) return;
  // (the checks of matmul_converted first: no conversion for a product that cannot run)
  const Kernels& wk = kernels(W.type, isa);
  if (!wk.vec_dot && !wk.gemv) fail("UNSUPPORTED_TYPE", strfmt("no dot product for %s", type_name(W.type)));
  matmul_converted(pool, W, convert_activations(pool, W.type, X, n, W.cols, act, isa), Y, isa, path, stop);
}

void matmul_converted(ThreadPool& pool, const MatrixRef& W, const ConvertedX& X, float* Y, Isa isa, MatmulPath path,
                      const std::atomic<bool>* stop) {
  auto stopped = [stop] { return stop && stop->load(std::memory_order_relaxed); };
  const int64_t n = X.n;
  if (n <= 0 || W.rows <= 0) return;
  if (X.type != vec_dot_type(W.type) || X.cols != W.cols)
    fail("INTERNAL", strfmt("activations of %s × %lld columns for %s × %lld", type_name(X.type), (long long)X.cols,
                            type_name(W.type), (long long)W.cols));
  const Kernels& wk = kernels(W.type, isa);
  if (!wk.vec_dot && !wk.gemv) fail("UNSUPPORTED_TYPE", strfmt("no dot product for %s", type_name(W.type)));
  // A repacked layout comes in groups of rows, which the split below keeps whole.
  const int64_t group = row_group(W.type);
  if (W.rows % group != 0)
    fail("INVALID_ARGUMENT", strfmt("%s matrices come in groups of %lld rows; this one has %lld", type_name(W.type),
                                    (long long)group, (long long)W.rows));
  const uint8_t* a = X.data;
  const size_t ldx = X.ld;
  const int64_t rows = W.rows, cols = W.cols;
  const int threads = pool.size();

  if (!wk.gemm || path == MatmulPath::VecDot || (path == MatmulPath::Auto && n < kGemmMinTokens)) {
    // Matrix-vector products (decode) and ISAs without a blocked kernel: each thread streams one
    // contiguous range of rows (parallel_ranges), every token reusing a row while it is in L1; the ISA's
    // matrix-vector kernel where it has one (not for path VecDot, unless the layout has no vec_dot), else
    // vec_dot per (row, token).
    // (Software prefetching ahead of the rows was tried: no faster when memory limits, and its
    // instructions cost the compute-bound K-quant kernels 5-15%.)
    const bool gemv = wk.gemv && (path != MatmulPath::VecDot || !wk.vec_dot);
    pool.parallel_ranges(rows / group, gemv_units_per_step(W, group, threads), [&](int64_t u0, int64_t u1, int) {
      if (stopped()) return;
      const int64_t r0 = u0 * group, r1 = u1 * group;
      const uint8_t* wr = W.data + size_t(r0) * W.ldw;
      if (gemv) {
        wk.gemv(cols, wr, W.ldw, a, ldx, Y + r0, rows, r1 - r0, n);
        return;
      }
      for (int64_t r = r0; r < r1; r++, wr += W.ldw)
        for (int64_t t = 0; t < n; t++) Y[t * rows + r] = wk.vec_dot(cols, wr, a + size_t(t) * ldx);
    });
    return;
  }

  // Blocks of rows × tokens. A token block's activations (tb · ldx bytes) should stay in L2 while the
  // row blocks stream past them, and be long, since every row block unpacks its weights once per token
  // block. Row blocks are large enough to amortise a kernel call and small enough to give every thread
  // several blocks. Both are multiples of 12, so that the kernels' tiles (3 or 4 rows × 2, 3, 4 or 6
  // tokens) divide them, and row blocks of a repacked layout multiples of its group too.
  constexpr int64_t kUnit = 12;
  const int64_t tb = std::clamp<int64_t>(int64_t((448u << 10) / std::max<size_t>(1, ldx)) / kUnit * kUnit, kUnit, 192);
  const int64_t tb_even = std::min(n, ceil_div(ceil_div(n, ceil_div(n, tb)), kUnit) * kUnit);
  const int64_t n_tb = ceil_div(n, tb_even);
  const int64_t row_unit = std::lcm(kUnit, group);
  int64_t rb = 96;
  while (rb > row_unit && ceil_div(rows, rb) * n_tb < int64_t(threads) * 6) rb /= 2;
  const int64_t n_rb = ceil_div(rows, rb);
  pool.parallel_for(n_rb * n_tb, [&](int64_t item, int) {
    if (stopped()) return;
    const int64_t jb = item / n_rb, ib = item % n_rb;
    const int64_t r0 = ib * rb, r1 = std::min(rows, r0 + rb);
    const int64_t t0 = jb * tb_even, t1 = std::min(n, t0 + tb_even);
    gemm_input_id() = X.id;
    wk.gemm(cols, W.data + size_t(r0) * W.ldw, W.ldw, a + size_t(t0) * ldx, ldx, Y + t0 * rows + r0, rows, r1 - r0,
            t1 - t0);
    gemm_input_id() = 0;
  });
}

}  // namespace folio::quant
