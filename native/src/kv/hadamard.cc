#include "kv/hadamard.h"

#include <cmath>
#include <vector>

namespace folio::kv {

int hadamard_block(int dim) { return dim > 0 ? dim & -dim : 1; }

namespace {

// One butterfly pass over a row: pairs (i, i + h) within blocks of 2h; vectorises over i. (Rotations run once
// per appended entry and per query row, never per entry read: the baseline build is enough.)
void butterfly(float* __restrict x, int dim, int h) {
  for (int b = 0; b < dim; b += 2 * h)
    for (int i = b; i < b + h; i++) {
      const float a = x[i], c = x[i + h];
      x[i] = a + c;
      x[i + h] = a - c;
    }
}

bool odd_bits(unsigned v) {
  bool odd = false;
  for (; v; v &= v - 1) odd = !odd;
  return odd;
}

}  // namespace

void hadamard(float* x, int dim, int64_t rows) {
  const int p = hadamard_block(dim);
  if (p < 2) return;
  const float norm = 1.0f / std::sqrt(float(p));
  for (int64_t r = 0; r < rows; r++) {
    float* row = x + r * dim;
    // The passes of every block at once: a pass of width h pairs within blocks of 2h <= p, so it never
    // crosses a block of p.
    for (int h = 1; h < p; h *= 2) butterfly(row, dim, h);
    for (int i = 0; i < dim; i++) row[i] *= norm;
  }
}

void hadamard_reference(float* x, int dim, int64_t rows) {
  const int p = hadamard_block(dim);
  if (p < 2) return;
  const double norm = 1.0 / std::sqrt(double(p));
  std::vector<double> out(static_cast<size_t>(dim));
  for (int64_t r = 0; r < rows; r++) {
    float* row = x + r * dim;
    for (int b = 0; b < dim; b += p)
      for (int i = 0; i < p; i++) {
        double s = 0;
        // H[i][j] = (−1)^popcount(i & j) / √p (Sylvester's construction)
        for (int j = 0; j < p; j++) s += (odd_bits(unsigned(i & j)) ? -1.0 : 1.0) * double(row[b + j]);
        out[size_t(b + i)] = s * norm;
      }
    for (int i = 0; i < dim; i++) row[i] = float(out[size_t(i)]);
  }
}

}  // namespace folio::kv
