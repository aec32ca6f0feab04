// Weight layouts of Folio's own, made from a file's matrices at load time for the x86 CPU kernels.
//
// Q4_K_R8 (blocks.h: BlockQ4_Kx8) holds 8 rows of a Q4_K matrix interleaved, super-block by super-block.
// A matrix-vector kernel then computes 8 rows in the lanes of one register: per 32-byte vector of weights
// it broadcasts 4 activation bytes instead of loading 32, adds the byte products of a sub-block in 16-bit
// lanes and multiplies by the 8 rows' scales once per sub-block, and never sums horizontally. With AVX2
// that is about half the instructions per weight byte of the Q4_K kernel, which on two cores could not
// keep up with this machine's memory (docs/benchmarks-log.md); the same kernel, a group against every token
// of a block, is also the faster blocked product. Q6_K_R8 does the same for Q6_K, on AVX2 only (AVX-512's
// own Q6_K kernel reads as fast). Q8_0_R8 does the same for Q8_0 (AVX2 and AVX-512), where it also
// spares the Q8_0 kernels' horizontal sum per row and token. Q3_K_R8, Q2_K_R8 and IQ4_XS_R8 do the same
// for Q3_K, Q2_K and IQ4_XS (AVX2 and AVX-512), whose file-layout kernels were compute-bound at about half of Q4_K_R8's
// GB/s and whose blocked products unpacked panels: 1.1-2x the decode and 1.35-2.9x the prefill speed
// of products alone (docs/benchmarks-log.md). All keep the file's bytes per row and its
// exact values: only the order of the float accumulation differs.
//
// Where the 8 rows' low and high bits lie in a block matters for reading from memory: two interleaved
// forward streams within each block (Q6_K_R8's first layout) streamed at half the speed from memory with
// one thread, 40% less with two. The layouts keep one forward stream.
//
// A matrix whose row count is no multiple of 8 keeps the file's layout (cpu_layout).
//
// A repacked matrix is addressed by groups: group g (rows 8g .. 8g + 7) starts at 8·g·row_bytes, so the
// matrix products take the same pointer arithmetic with row counts and offsets that are multiples of 8.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quant/quant.h"
#include "quant/types.h"

namespace folio::quant {

// Rows per group of a repacked layout; 1 for the file types.
int64_t row_group(TensorType type);

// The layout the CPU kernels of `isa` want for a matrix of `rows` rows of `type`: a repacked type where
// that ISA has kernels for it that are faster, else `type` itself. FOLIO_REPACK=0 in the environment
// keeps every matrix as the file has it (to measure the difference).
TensorType cpu_layout(TensorType type, int64_t rows, Isa isa);

// Writes rows [g0·8, g1·8) of the matrix at src (`type`, rows ld_src bytes apart, `cols` elements) in
// layout `to` (cpu_layout's answer) at dst, the start of the whole repacked matrix. Independent groups,
// so that callers can split the work over threads.
void repack_groups(TensorType type, TensorType to, const uint8_t* src, size_t ld_src, int64_t cols, int64_t g0,
                   int64_t g1, uint8_t* dst);

// Row `lane` (< 8) of the group at `group` in a repacked layout, `cols` elements, as floats: the test
// that repacking keeps every value.
void dequantize_repacked_row(TensorType layout, const uint8_t* group, int lane, int64_t cols, float* y);

}  // namespace folio::quant
