// A weight matrix (or vector) in its GGUF type, where a compute backend reads it: the one description of
// a weight that model/ (which binds them from a file) and backend/ (which multiplies with them) share.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/types.h"

namespace folio {

// Rows [row0, row0 + rows) of a weight held as an allocation of their own: a device whose largest
// allocation is smaller than a weight gets it in parts of whole rows (forward/weights.cc).
struct WeightPart {
  const uint8_t* data = nullptr;
  int64_t row0 = 0, rows = 0;
};

// `rows` rows of `cols` elements of `type`, row-major, rows `row_bytes` apart (for a repacked type, groups
// of rows: quant/repack.h; row() then means nothing). `data` is host memory for the CPU backend and device
// memory for a GPU backend.
struct Weight {
  const uint8_t* data = nullptr;
  TensorType type = TensorType::F32;
  int64_t cols = 0;  // ne[0]: the input width of a matrix
  int64_t rows = 0;  // ne[1]: the output width of a matrix
  size_t row_bytes = 0;
  // A weight split in parts (on a GPU only): `data` is the first part's, and a product runs part by part.
  const std::vector<WeightPart>* parts = nullptr;
  explicit operator bool() const { return data != nullptr; }
  const uint8_t* row(int64_t r) const { return data + size_t(r) * row_bytes; }
  const float* f32() const { return reinterpret_cast<const float*>(data); }
  // Part p of a split weight as a weight of its own.
  Weight part(const WeightPart& p) const {
    Weight w = *this;
    w.data = p.data;
    w.rows = p.rows;
    w.parts = nullptr;
    return w;
  }
};

}  // namespace folio
