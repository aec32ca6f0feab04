// The table's operations, one file per family: elementwise.cc (and hadamard), matmul.cc (and get_rows), kv.cc
// (the KV cache's append and compaction, attention), scoring.cc (SnapKV window scores).
#ifndef FOLIO_VULKAN_OPS_H
#define FOLIO_VULKAN_OPS_H

#include <cstdint>

#include "backend/gpu-abi.h"

namespace folio::vulkan {

// A device pointer as the kernels take it (a buffer device address in the push constants).
inline uint64_t addr(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }

int matmul(const void* w, int32_t type, int64_t rows, int64_t cols, size_t ldw, const float* x, int64_t n, float* y);
int get_rows(const void* w, int32_t type, int64_t cols, size_t ldw, const int32_t* ids, int64_t n, float* out);
int rms_norm(const float* x, const float* g, float* y, int64_t n, int64_t width, float eps);
int rope(float* x, int64_t n, int32_t n_heads, int32_t head_dim, const int32_t* pos, const folio_gpu_rope* p,
         const float* freq_factors);
int swiglu(const float* g, const float* u, float* h, int64_t count);
int geglu(const float* g, const float* u, float* h, int64_t count);
int scale(float* x, float s, int64_t count);
int add(float* x, const float* y, int64_t count);
int add_bias(float* x, const float* b, int64_t n, int64_t width);
int kv_append(const folio_gpu_kv_layer* layer, const float* k, const float* v, const int32_t* pos, int32_t n);
int attention(const float* q, const folio_gpu_kv_layer* layer, int32_t m, int32_t n_head, int32_t n_swa, float* out);
int window_scores(const float* qw, const folio_gpu_kv_layer* layer, int32_t n_head, int32_t L, int32_t w,
                  int32_t kernel, float* attn, float* score);
// Forgets window_scores' scratch buffer (close frees every allocation).
void release_scoring_scratch();
// Forgets attention's scratch buffer (close frees every allocation).
void release_attention_scratch();
int kv_gather(const folio_gpu_kv_layer* src, const folio_gpu_kv_layer* dst, const int32_t* keep,
              const int64_t* start_host);
int hadamard(float* x, int64_t rows, int32_t block);

// Whether the kernels can read a KV layer (its shape, types F32/F16/Q8_0/Q4_0 and entry sizes): 0, or fail()
// naming `what` (kv.cc; kv_append, attention, kv_gather and window_scores check with it).
int check_layer(const char* what, const folio_gpu_kv_layer& L);

}  // namespace folio::vulkan

#endif
