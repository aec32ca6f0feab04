// Inside libfolio-cuda: the operations of the GPU table (backend/gpu-abi.h), one file per concern, and
// what they share. api.cu fills the table with these functions; each has the contract written there.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/gpu-abi.h"

namespace folio::cuda {

// The one stream every operation is queued on (api.cu).
cudaStream_t stream();
// The device's multiprocessor count (sizes the split of long key ranges over the GPU).
int multiprocessors();
// Records a failure for last_error and returns its nonzero code: `what` names the operation.
int fail(const char* what, cudaError_t e);
int fail(const char* what, const char* message);
// After a kernel launch: the launch's own error (bad configuration), 0 if none.
int check_launch(const char* what);
// Device scratch of at least `bytes`, reused across calls of the same slot (grows, never shrinks). The
// contents are undefined; valid until the next call for the same slot. nullptr on failure (fail called).
enum class Scratch { Matmul = 0, Scores = 1, Select = 2, Count = 3 };
void* scratch(Scratch slot, size_t bytes);

// matmul.cu (dequantizing matrix-vector products and tiled GEMM for every weight type)
int matmul(const void* w, int32_t type, int64_t rows, int64_t cols, size_t ldw, const float* x, int64_t n, float* y);
int get_rows(const void* w, int32_t type, int64_t cols, size_t ldw, const int32_t* ids, int64_t n, float* out);

// elementwise.cu
int rms_norm(const float* x, const float* g, float* y, int64_t n, int64_t width, float eps);
int rope(float* x, int64_t n, int32_t n_heads, int32_t head_dim, const int32_t* pos, const folio_gpu_rope* p,
         const float* freq_factors);
int swiglu(const float* g, const float* u, float* h, int64_t count);
int geglu(const float* g, const float* u, float* h, int64_t count);
int scale(float* x, float s, int64_t count);
int hadamard(float* x, int64_t rows, int32_t block);
int add(float* x, const float* y, int64_t count);
int add_bias(float* x, const float* b, int64_t n, int64_t width);

// kv.cu (the flat per-head cache: appends in place, compaction)
// The layer's entry types, sizes and head sizes against one another: 0, or fail(what, ...)'s code.
int check_layer(const char* what, const folio_gpu_kv_layer& layer);
int kv_append(const folio_gpu_kv_layer* layer, const float* k, const float* v, const int32_t* pos, int32_t n);
int kv_gather(const folio_gpu_kv_layer* src, const folio_gpu_kv_layer* dst, const int32_t* keep, const int64_t* start);

// attention.cu (flash-style causal prefill and variable-length decode)
int attention(const float* q, const folio_gpu_kv_layer* layer, int32_t m, int32_t n_head, int32_t n_swa, float* out);

// scoring.cu (the SnapKV window scores)
int window_scores(const float* qw, const folio_gpu_kv_layer* layer, int32_t n_head, int32_t L, int32_t w,
                  int32_t kernel, float* attn, float* score);

}  // namespace folio::cuda
