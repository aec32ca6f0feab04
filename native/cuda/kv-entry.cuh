// The cache's entries on the device (backend/gpu-abi.h, folio_gpu_kv_layer; kv/entry-format.h is the CPU's
// side): reading element i of an entry of any type, and quantizing a block as the CPU does, bit for bit.
//
// An entry of `dim` numbers is F32, F16, or Q8_0 / Q4_0 blocks of 32 (an f16 scale d, then 32 int8 q or 16
// bytes of nibbles), the last block shorter (len = dim mod 32) where dim is no multiple of 32: d, then len
// int8 or len/2 bytes (element j low nibble of byte j, element j + len/2 high). Entries are packed, so a
// block starts at an even byte only when the entry's size is even; the readers take `Even` (the entry's size,
// known per layer) to read d as one 16-bit word, else as two bytes. The q are always read as bytes.
//
// Quantizing follows kv/entry-format.cc (encode_block) and quant/quant-scalar.cc operation for operation:
// IEEE division (__fdiv_rn: 1/d must be the CPU's; the library is built without fast math anyway) and
// products rounded on their own (no FMA contraction of x·id + 8.5, which the CPU's baseline build has not).
// Everything is __host__ __device__ so that tests/cuda-kv-entry-selftest.cu checks it against the engine.
#pragma once
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "dequant.cuh"

namespace folio::cuda::entry {

#define FOLIO_HD __host__ __device__ __forceinline__

// The ggml type ids of the cache types (KvType).
enum : int32_t { kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8 };
constexpr int kBlock = 32;

FOLIO_HD bool type_known(int32_t t) { return t == kF32 || t == kF16 || t == kQ8_0 || t == kQ4_0; }
FOLIO_HD bool type_quantized(int32_t t) { return t == kQ8_0 || t == kQ4_0; }
// The bytes of a quantized block of len numbers (len ≤ 32; 32: GGUF's 34 and 18).
FOLIO_HD int block_bytes(int32_t t, int len) { return t == kQ8_0 ? 2 + len : 2 + len / 2; }
// The bytes of an entry of dim numbers (kv::entry_bytes).
FOLIO_HD int64_t entry_bytes(int32_t t, int dim) {
  if (t == kF32) return int64_t(dim) * 4;
  if (t == kF16) return int64_t(dim) * 2;
  return int64_t(dim / kBlock) * block_bytes(t, kBlock) + (dim % kBlock ? block_bytes(t, dim % kBlock) : 0);
}

// ---- rounding as the CPU's ----

FOLIO_HD float div_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
FOLIO_HD float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
// float → IEEE binary16 bits, round to nearest even (core/fp16.h's f32_to_fp16).
FOLIO_HD uint32_t half_bits(float x) { return __half_raw(__float2half_rn(x)).x; }

// ---- reading ----

// The f16 scale at p: one 16-bit load where the block is 2-byte aligned, else two bytes (little-endian).
template <bool Even>
FOLIO_HD float scale_at(const uint8_t* p) {
  if constexpr (Even) return dq::half_to_float(dq::ld16(p));
  else return dq::half_to_float(uint32_t(p[0]) | uint32_t(p[1]) << 8);
}

// Element i (0 ≤ i < dim) of the entry at e, one reader per type: Reader::at(e, dim, i). The values are
// those of kv::decode_stored bit for bit (the same products: float(q) · d).
struct F32 {
  FOLIO_HD static float at(const uint8_t* e, int, int i) { return dq::bits_to_float(dq::ld32(e + 4 * i)); }
};
struct F16 {
  FOLIO_HD static float at(const uint8_t* e, int, int i) { return dq::half_to_float(dq::ld16(e + 2 * i)); }
};
template <bool Even>
struct Q8_0 {
  FOLIO_HD static float at(const uint8_t* e, int, int i) {
    const uint8_t* blk = e + (i / kBlock) * 34;
    return float(int8_t(blk[2 + i % kBlock])) * scale_at<Even>(blk);
  }
};
template <bool Even>
struct Q4_0 {
  FOLIO_HD static float at(const uint8_t* e, int dim, int i) {
    const int b = i / kBlock, k = i % kBlock;
    const int rest = dim - b * kBlock, half = (rest < kBlock ? rest : kBlock) / 2;  // the block's len / 2
    const uint8_t* blk = e + b * 18;
    const uint32_t byte = blk[2 + (k < half ? k : k - half)];
    return float(int(k < half ? byte & 15 : byte >> 4) - 8) * scale_at<Even>(blk);
  }
};

// Element i of an entry of type t and `bytes` bytes (the readers above, chosen at run time; for tests and
// for code that is not per element hot).
FOLIO_HD float load(int32_t t, const uint8_t* e, int64_t bytes, int dim, int i) {
  const bool even = bytes % 2 == 0;
  switch (t) {
    case kF32: return F32::at(e, dim, i);
    case kF16: return F16::at(e, dim, i);
    case kQ8_0: return even ? Q8_0<true>::at(e, dim, i) : Q8_0<false>::at(e, dim, i);
    default: return even ? Q4_0<true>::at(e, dim, i) : Q4_0<false>::at(e, dim, i);
  }
}

// ---- quantizing ----

// The number a block's scale is made from: the x of largest magnitude, the first of equals (what Q4_0
// divides by −8; Q8_0 takes its magnitude). A number that is not > 0 in magnitude (zero, −0, NaN) is never
// taken, as in the CPU's loop, which starts from +0. As a (value, index) pair so that a warp can reduce it
// in any order: `better` is commutative and associative, and the result is the serial loop's.
struct Pick {
  float x;
  int i;
};
FOLIO_HD Pick pick_of(float x, int i) { return {fabsf(x) > 0.0f ? x : 0.0f, i}; }
FOLIO_HD Pick better(Pick a, Pick b) {
  const float ma = fabsf(a.x), mb = fabsf(b.x);
  return mb > ma || (mb == ma && b.i < a.i) ? b : a;
}

// A block's scale from its pick: d (stored as f16) and id, which the q are made with (d before rounding).
//   Q8_0: d = amax / 127        Q4_0: d = m / −8        id = d ≠ 0 ? 1/d : 0
FOLIO_HD void block_scale(int32_t t, float pick, float* d, float* id) {
  *d = t == kQ8_0 ? div_rn(fabsf(pick), 127.0f) : div_rn(pick, -8.0f);
  *id = *d != 0.0f ? div_rn(1.0f, *d) : 0.0f;
}
// The q of x: Q8_0 round(x·id), halves away from 0 (−127 .. 127); Q4_0 min(15, int(x·id + 8.5)) (0 .. 15).
FOLIO_HD int block_q(int32_t t, float x, float id) {
  const float p = dq::mul_rn(x, id);
  if (t == kQ8_0) return int(roundf(p));
  const int q = int(add_rn(p, 8.5f));  // truncation: round half up into 0 .. 16
  return q < 15 ? q : 15;
}
// Stores d as f16 at p (any alignment: bytes).
FOLIO_HD void store_scale(uint8_t* p, float d) {
  const uint32_t h = half_bits(d);
  p[0] = uint8_t(h);
  p[1] = uint8_t(h >> 8);
}

// One block of n ≤ 32 numbers x into out (block_bytes(t, n) bytes) by one thread: encode_block's loop.
FOLIO_HD void quantize_block(int32_t t, const float* x, int n, uint8_t* out) {
  Pick p = pick_of(0.0f, 0);
  for (int i = 0; i < n; i++) p = better(p, pick_of(x[i], i));
  float d, id;
  block_scale(t, p.x, &d, &id);
  store_scale(out, d);
  if (t == kQ8_0) {
    for (int i = 0; i < n; i++) out[2 + i] = uint8_t(int8_t(block_q(t, x[i], id)));
    return;
  }
  const int half = n / 2;
  for (int j = 0; j < half; j++) out[2 + j] = uint8_t(block_q(t, x[j], id) | block_q(t, x[j + half], id) << 4);
}

// One entry of dim numbers x into out (entry_bytes(t, dim) bytes) by one thread: kv::encode_reference.
FOLIO_HD void encode_entry(int32_t t, const float* x, int dim, uint8_t* out) {
  if (t == kF32 || t == kF16) {
    for (int i = 0; i < dim; i++) {
      if (t == kF32) {
        memcpy(out + 4 * i, &x[i], 4);
      } else {
        const uint32_t h = half_bits(x[i]);
        out[2 * i] = uint8_t(h);
        out[2 * i + 1] = uint8_t(h >> 8);
      }
    }
    return;
  }
  for (int b = 0; b < dim; b += kBlock) {
    const int len = dim - b < kBlock ? dim - b : kBlock;
    quantize_block(t, x + b, len, out);
    out += block_bytes(t, len);
  }
}

#undef FOLIO_HD

// ---- device: tiles of a head's entries in shared memory ----

// Entries [j0, j0 + nb) of the run at base (entries of `bytes`, dim numbers each) into dst [Rows, ld] as
// floats, zeros in rows nb .. Rows. Element by element over the block's threads: consecutive threads read
// consecutive elements of an entry (coalesced), and a quantized block's scale, read by each of its elements'
// threads, comes from the cache after the first.
template <class Reader, int Rows>
__device__ __forceinline__ void load_rows_as(float* dst, int ld, const uint8_t* base, int64_t bytes, int dim,
                                             int32_t j0, int nb) {
  for (int idx = threadIdx.x; idx < Rows * dim; idx += blockDim.x) {
    const int j = idx / dim, d = idx - j * dim;
    dst[j * ld + d] = j < nb ? Reader::at(base + int64_t(j0 + j) * bytes, dim, d) : 0.0f;
  }
}

// The same for a type t known at run time (the same for the whole block: a uniform branch per tile). Quant:
// whether t may be quantized; a kernel for F32 and F16 only is built without those readers, which would
// cost it registers.
template <int Rows, bool Quant = true>
__device__ __forceinline__ void load_rows(int32_t t, float* dst, int ld, const uint8_t* base, int64_t bytes, int dim,
                                          int32_t j0, int nb) {
  const bool even = bytes % 2 == 0;
  if (!Quant || t == kF32 || t == kF16) {
    if (t == kF32) load_rows_as<F32, Rows>(dst, ld, base, bytes, dim, j0, nb);
    else load_rows_as<F16, Rows>(dst, ld, base, bytes, dim, j0, nb);
    return;
  }
  switch (t) {
    case kQ8_0:
      if (even) load_rows_as<Q8_0<true>, Rows>(dst, ld, base, bytes, dim, j0, nb);
      else load_rows_as<Q8_0<false>, Rows>(dst, ld, base, bytes, dim, j0, nb);
      break;
    default:
      if (even) load_rows_as<Q4_0<true>, Rows>(dst, ld, base, bytes, dim, j0, nb);
      else load_rows_as<Q4_0<false>, Rows>(dst, ld, base, bytes, dim, j0, nb);
      break;
  }
}

}  // namespace folio::cuda::entry
