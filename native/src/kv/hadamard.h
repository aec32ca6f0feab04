// A fixed orthogonal transform of a head's keys and values before they are quantized (issue 43): the
// normalised Walsh-Hadamard transform over the head dimension. It spreads an outlier channel over all the
// others, so that a block's one scale no longer has to cover it. H is symmetric and orthogonal (H·H = I), so
// rotating the query as well leaves q·k unchanged, and rotating the attention's output back undoes it on the
// values: (Hq)·(Hk) = q·k, H·Σ p_j (H v_j) = Σ p_j v_j.
//
// A head size that is not a power of two is transformed in blocks of the largest power of two dividing it
// (block-diagonal, still orthogonal): 96 → three blocks of 32.
#pragma once
#include <cstdint>

namespace folio::kv {

// The block the transform works in for rows of `dim` values: the largest power of two dividing dim.
int hadamard_block(int dim);

// x [rows, dim] ← each row times H, in place: the fast transform (log2(block) butterfly passes).
void hadamard(float* x, int dim, int64_t rows);

// The same as a matrix product with H's entries (±1/√block), slow and obviously right: the fast one's check.
void hadamard_reference(float* x, int dim, int64_t rows);

}  // namespace folio::kv
