// Matrix products of weights in any supported type with float activations, split over a thread pool:
// the engine's cpu::matmul (backend/matmul.cc) and the binding's ops.matmul both come here.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/thread-pool.h"
#include "quant/quant.h"
#include "quant/types.h"

namespace folio::quant {

// `rows` rows of `cols` elements of `type`, row r at data + r·ldw; for a repacked type (quant/repack.h)
// rows come in groups, group g at data + g·G·ldw, and rows is a multiple of the group size G.
struct MatrixRef {
  const uint8_t* data = nullptr;
  TensorType type = TensorType::F32;
  int64_t rows = 0, cols = 0;
  size_t ldw = 0;
};

// Y[t·rows + r] = Σ_c W[r, c]·X[t, c] for X [n, cols], Y [n, rows]. X is first converted to the weight
// type's vec_dot_type (into `act`, grown as needed and reused across calls); then
//  - fewer than 4 tokens (decode): every thread streams one contiguous part of the rows, a step at a
//    time, and then helps with the ends of the others' (ThreadPool::parallel_ranges), through the ISA's
//    matrix-vector kernel (Kernels::gemv) or vec_dot;
//  - more tokens (prefill): the product is cut into blocks of rows × tokens (sized so that a block's
//    activations stay in the L2 cache while its weights stream through), handed out to the threads
//    token block by token block, each computed by the ISA's blocked kernel.
// `path` forces one way for tests: Blocked runs the blocked kernel for any n (where the ISA has one),
// VecDot the vec_dot loop (never gemv; a repacked layout, which has no vec_dot, runs its gemv).
// `stop`, when set during the product, makes the remaining blocks be skipped (the output is then
// incomplete: the caller, which set it to cancel, throws it away).
enum class MatmulPath { Auto, Blocked, VecDot };
void matmul(ThreadPool& pool, const MatrixRef& W, const float* X, int64_t n, float* Y, std::vector<uint8_t>& act,
            Isa isa, MatmulPath path = MatmulPath::Auto, const std::atomic<bool>* stop = nullptr);

// X [n, cols] converted for the products with weights of one type: into their vec_dot_type, in the
// buffer `act` (F32: X itself). Several products with the same input (the q, k and v projections of one
// normed input; gate and up) convert it once and pass it to matmul_converted each.
struct ConvertedX {
  TensorType type = TensorType::F32;  // vec_dot_type of the weights
  const uint8_t* data = nullptr;      // n rows, ld bytes apart
  size_t ld = 0;
  int64_t n = 0, cols = 0;
  // unique to this conversion (0: unknown): the products that share it (q, k and v; gate and up) may keep
  // what a blocked kernel derives from these activations (gemm.h, gemm_input_id)
  uint64_t id = 0;
};
ConvertedX convert_activations(ThreadPool& pool, TensorType weight_type, const float* X, int64_t n, int64_t cols,
                               std::vector<uint8_t>& act, Isa isa);
// matmul with X already converted (X.type must be vec_dot_type(W.type), X.cols W.cols).
void matmul_converted(ThreadPool& pool, const MatrixRef& W, const ConvertedX& X, float* Y, Isa isa,
                      MatmulPath path = MatmulPath::Auto, const std::atomic<bool>* stop = nullptr);

// The same product with vec_dot alone, one (row, token) at a time: what the blocked kernels are checked
// against.
void matmul_reference(ThreadPool& pool, const MatrixRef& W, const float* X, int64_t n, float* Y,
                      std::vector<uint8_t>& act, Isa isa);

}  // namespace folio::quant
