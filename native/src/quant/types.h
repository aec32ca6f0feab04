// The ggml tensor types as GGUF files number them (ggml.h, enum ggml_type), with their block layouts.
// Every type is known to the GGUF reader so that it can validate sizes; which ones the engine computes
// with, its kernel table says (quant::weight_type_supported, quant/quant.h). Past the ggml ids come Folio's own
// layouts, made at load time and never read from a file (`internal`): Q4_K_R8, Q6_K_R8, Q8_0_R8, Q3_K_R8,
// Q2_K_R8 and IQ4_XS_R8 are Q4_K, Q6_K, Q8_0, Q3_K, Q2_K and IQ4_XS with rows interleaved in eights
// (blocks.h, quant/repack.h).
#pragma once
#include <cstddef>
#include <cstdint>

namespace folio {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  Q4_K_R8 = 40,
  Q6_K_R8 = 41,
  Q8_0_R8 = 42,
  Q3_K_R8 = 43,
  Q2_K_R8 = 44,
  IQ4_XS_R8 = 45,
};

struct TypeInfo {
  const char* name;
  uint32_t block_size;    // elements per block
  uint32_t type_size;     // bytes per block
  bool internal = false;  // a layout of Folio's own: a GGUF file naming this id is invalid
};

// nullptr for ids that are neither ggml types nor Folio's own.
const TypeInfo* type_info(uint32_t id);
inline const TypeInfo& type_info(TensorType t) { return *type_info(uint32_t(t)); }
inline const char* type_name(TensorType t) { return type_info(t).name; }

// Bytes of a row of n elements; n must be a multiple of the block size. (For an interleaved layout, a
// group of rows takes the rows' bytes together.)
inline size_t row_bytes(TensorType t, int64_t n) {
  const TypeInfo& ti = type_info(t);
  return size_t(n / ti.block_size) * ti.type_size;
}

}  // namespace folio
