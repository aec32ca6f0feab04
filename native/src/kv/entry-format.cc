#include "kv/entry-format.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "kv/hadamard.h"
#include "quant/quant.h"

namespace folio {

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::F32: return "f32";
    case KvType::F16: return "f16";
    case KvType::Q8_0: return "q8_0";
    case KvType::Q4_0: return "q4_0";
  }
  return "?";
}

bool kv_type_from_name(const std::string& name, KvType* out) {
  for (KvType t : {KvType::F32, KvType::F16, KvType::Q8_0, KvType::Q4_0})
    if (name == kv_type_name(t)) {
      *out = t;
      return true;
    }
  return false;
}

bool kv_type_quantized(KvType t) { return t == KvType::Q8_0 || t == KvType::Q4_0; }

bool kv_type_valid(uint32_t id) {
  return id == uint32_t(KvType::F32) || id == uint32_t(KvType::F16) || id == uint32_t(KvType::Q8_0) ||
         id == uint32_t(KvType::Q4_0);
}

std::string kv_format_name(const KvFormat& f) {
  std::string s = kv_type_name(f.k);
  if (f.v != f.k) s += std::string("/") + kv_type_name(f.v);
  if (f.rotate_k() || f.rotate_v()) s += "+rot";
  return s;
}

namespace kv {

namespace {

constexpr int kBlock = 32;

// The bytes of a block of len numbers (len ≤ 32; a whole block is GGUF's).
size_t block_bytes(KvType t, int len) { return t == KvType::Q8_0 ? 2 + size_t(len) : 2 + size_t(len) / 2; }

TensorType tensor_type(KvType t) { return TensorType(int(t)); }  // the same ggml ids

// One block of len ≤ 32 numbers by the reference formulas (quant-scalar.cc).
void encode_block(KvType t, const float* x, uint8_t* out, int len) {
  if (t == KvType::Q8_0) quant::quantize_block_q8_0(x, out, len);
  else quant::quantize_block_q4_0(x, out, len);
}

float decode_element(KvType t, const uint8_t* block, int len, int i) {
  uint16_t dh;
  std::memcpy(&dh, block, 2);
  const float d = fp16_to_f32(dh);
  if (t == KvType::Q8_0) return d * float(int8_t(block[2 + i]));
  const int half = len / 2;
  const uint8_t b = block[2 + (i < half ? i : i - half)];
  return d * float((i < half ? b & 15 : b >> 4) - 8);
}

// Scratch for rotating rows before they are encoded (append runs per token and head).
thread_local std::vector<float> rotated;

}  // namespace

size_t entry_bytes(KvType t, int dim) {
  switch (t) {
    case KvType::F32: return size_t(dim) * 4;
    case KvType::F16: return size_t(dim) * 2;
    default: return size_t(dim / kBlock) * block_bytes(t, kBlock) + (dim % kBlock ? block_bytes(t, dim % kBlock) : 0);
  }
}

void check_format(const KvFormat& f, int head_dim, int head_dim_v) {
  // Q4_0 pairs the halves of a block (RoPE makes every head size even; a model with an odd one cannot use it).
  if ((f.k == KvType::Q4_0 && head_dim % 2) || (f.v == KvType::Q4_0 && head_dim_v % 2))
    fail("NOT_SUPPORTED", "a q4_0 cache needs heads of an even size: choose q8_0 or f16 for this model");
}

void encode(KvType t, bool rotate, const float* src, uint8_t* dst, int dim, int64_t n) {
  if (rotate) {
    rotated.assign(src, src + n * dim);
    hadamard(rotated.data(), dim, n);
    src = rotated.data();
  }
  if (t == KvType::F32) {
    std::memcpy(dst, src, size_t(n) * size_t(dim) * 4);
    return;
  }
  const quant::Kernels& q = quant::kernels(tensor_type(t));
  if (t == KvType::F16 || dim % kBlock == 0) {  // whole blocks: the entries are one run of them
    q.quantize_row(src, dst, n * dim);
    return;
  }
  const int whole = dim / kBlock * kBlock;
  const size_t eb = entry_bytes(t, dim), head = size_t(whole / kBlock) * block_bytes(t, kBlock);
  for (int64_t e = 0; e < n; e++) {
    if (whole) q.quantize_row(src + e * dim, dst + size_t(e) * eb, whole);
    encode_block(t, src + e * dim + whole, dst + size_t(e) * eb + head, dim - whole);
  }
}

void decode_stored(KvType t, const uint8_t* src, float* dst, int dim, int64_t n) {
  if (t == KvType::F32) {
    std::memcpy(dst, src, size_t(n) * size_t(dim) * 4);
    return;
  }
  const quant::Kernels& q = quant::kernels(tensor_type(t));
  if (t == KvType::F16 || dim % kBlock == 0) {
    q.dequantize_row(src, dst, n * dim);
    return;
  }
  const int whole = dim / kBlock * kBlock, tail = dim - whole;
  const size_t eb = entry_bytes(t, dim), head = size_t(whole / kBlock) * block_bytes(t, kBlock);
  for (int64_t e = 0; e < n; e++) {
    if (whole) q.dequantize_row(src + size_t(e) * eb, dst + e * dim, whole);
    const uint8_t* b = src + size_t(e) * eb + head;
    for (int i = 0; i < tail; i++) dst[e * dim + whole + i] = decode_element(t, b, tail, i);
  }
}

void decode(KvType t, bool rotate, const uint8_t* src, float* dst, int dim, int64_t n) {
  decode_stored(t, src, dst, dim, n);
  if (rotate) hadamard(dst, dim, n);  // H is its own inverse
}

void encode_reference(KvType t, const float* src, uint8_t* dst, int dim) {
  if (t == KvType::F32) {
    std::memcpy(dst, src, size_t(dim) * 4);
    return;
  }
  if (t == KvType::F16) {
    for (int i = 0; i < dim; i++) {
      const uint16_t h = f32_to_fp16(src[i]);
      std::memcpy(dst + 2 * i, &h, 2);
    }
    return;
  }
  for (int b = 0; b < dim; b += kBlock) {
    const int len = std::min(kBlock, dim - b);
    encode_block(t, src + b, dst, len);
    dst += block_bytes(t, len);
  }
}

float decode_reference(KvType t, const uint8_t* entry, int dim, int i) {
  if (t == KvType::F32) {
    float x;
    std::memcpy(&x, entry + 4 * i, 4);
    return x;
  }
  if (t == KvType::F16) {
    uint16_t h;
    std::memcpy(&h, entry + 2 * i, 2);
    return fp16_to_f32(h);
  }
  const int b = i / kBlock;
  return decode_element(t, entry + size_t(b) * block_bytes(t, kBlock), std::min(kBlock, dim - b * kBlock), i % kBlock);
}

}  // namespace kv
}  // namespace folio
