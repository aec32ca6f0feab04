// Kernels on quantized blocks: dequantize a row, quantize a row, dot product of a weight row with an
// activation row. Every type has a scalar reference; AVX2 / AVX-512 (x86) and NEON (arm64) versions are
// compiled per function with target attributes and chosen at run time. Tests compare each ISA's kernels
// with the scalar reference on random blocks (test/quant.test.ts through the binding's `ops`).
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace folio::quant {

enum class Isa : int { Scalar = 0, AVX2 = 1, AVX512 = 2, NEON = 3 };
constexpr int kIsaCount = 4;
const char* isa_name(Isa isa);
// Compiled in and supported by this CPU (AVX2 also requires FMA and F16C).
bool isa_available(Isa isa);
// The fastest available ISA; the environment variable FOLIO_ISA (scalar, avx2, avx512, neon) can force a
// slower one for debugging.
Isa best_isa();

// The activation format that a weight type's dot product consumes (ggml's vec_dot_type):
// F32->F32, F16->F16, BF16->BF16, Q4_0/Q5_0/Q8_0/IQ4_NL->Q8_0, Q4_1/Q5_1->Q8_1,
// Q2_K/Q3_K/Q4_K/Q5_K/Q6_K/IQ4_XS->Q8_K.
TensorType vec_dot_type(TensorType weight);

struct Kernels {
  // dst[0, n) = the values of n elements at src; n is a multiple of the block size.
  void (*dequantize_row)(const void* src, float* dst, int64_t n) = nullptr;
  // Quantizes n floats into this type (round-to-nearest reference quantization, as ggml's
  // quantize_row_*_ref; the K-quants use their own simple scale search); for the activation types F16,
  // BF16, Q8_0, Q8_1 and Q8_K these are the fast paths of every matrix product and give the same bytes
  // on every ISA.
  void (*quantize_row)(const float* src, void* dst, int64_t n) = nullptr;
  // Σ w[i]·x[i] over n elements: w in this type, x in vec_dot_type(this type), as the quantizers above
  // produce it: Q8_0 activation quants in -127..127 (the x86 Q8_0·Q8_0 kernels use the sign trick, which
  // cannot negate -128), Q8_1's s and Q8_K's bsums consistent with the quants (the kernels use them for
  // the offset terms). Integer sums per block are exact; ISAs differ only by float rounding.
  float (*vec_dot)(int64_t n, const void* w, const void* x) = nullptr;
  // The blocked matrix product (gemm-*.cc) of m weight rows with n activation rows, nullptr where an ISA
  // has none (the matrix product then calls vec_dot per row and token):
  //   y[t·ldy + r] = Σ_c w_r[c]·x_t[c]   for r < m, t < n,
  // weight row r at w + r·ldw, activation row t at x + t·ldx in vec_dot_type (as quantize_row writes it),
  // k elements each. Tiles of several rows × several tokens share their loads. Integer sums per block
  // are exact and equal to vec_dot's, float scaling and accumulation may round differently: results
  // agree with vec_dot's within float rounding (test/matmul.test.ts states the bound).
  void (*gemm)(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m,
               int64_t n) = nullptr;
  // The same product for a few tokens (decode), reading the weights in place (nullptr: vec_dot per row
  // and token). Same arguments and guarantees as gemm.
  void (*gemv)(int64_t k, const void* w, size_t ldw, const void* x, size_t ldx, float* y, int64_t ldy, int64_t m,
               int64_t n) = nullptr;
};

// One Q8_0 or Q4_0 block by the reference formulas (the scalar quantize_row's), of len ≤ 32 numbers: 32 is
// GGUF's block; fewer, the KV cache's short last block (kv/entry-format.h). out gets the f16 scale d, then
// len int8 (Q8_0), or len/2 bytes with element j in the low nibble and j + len/2 in the high (Q4_0, len even).
void quantize_block_q8_0(const float* x, uint8_t* out, int len);
void quantize_block_q4_0(const float* x, uint8_t* out, int len);

// Whether the engine computes with weights of this type: the kernel table has a row dequantizer and a dot
// product for it (every ISA's table starts from the scalar one). This is the one list of supported weight
// types; the model loader asks it.
bool weight_type_supported(TensorType type);

// The kernels of one type for one ISA; entries the ISA does not specialise fall back to the next lower
// ISA's (AVX-512 -> AVX2 -> scalar, NEON -> scalar). Q8_1 and Q8_K (activations only) have no vec_dot.
// Throws Error UNSUPPORTED_TYPE for types without kernels, INVALID_ARGUMENT for an unavailable ISA.
const Kernels& kernels(TensorType type, Isa isa);
inline const Kernels& kernels(TensorType type) { return kernels(type, best_isa()); }

}  // namespace folio::quant
