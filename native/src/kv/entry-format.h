// How one cached entry (a head's key or value row of `dim` numbers) is stored: its element type and whether
// it was rotated first (kv/hadamard.h). F32 and F16 hold the numbers as they are; Q8_0 and Q4_0 hold them in
// blocks of 32 with one f16 scale each, byte for byte as GGUF defines them (quant/blocks.h):
//   Q8_0, 34 bytes: d, then 32 int8 q;        x = d·q
//   Q4_0, 18 bytes: d, then 16 bytes of nibbles (element j low nibble of byte j, element j+16 high); x = d·(q − 8)
// A head size that is no multiple of 32 (the tiny test models' 8 and 16) ends in a shorter block of the same
// kind: d, then len int8 (Q8_0) or len/2 bytes with element j low, j + len/2 high (Q4_0). Real models' heads
// (64, 128, 256) are whole blocks, so their entries are GGUF's blocks exactly.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace folio {

enum class KvType : uint8_t { F32 = 0, F16 = 1, Q4_0 = 2, Q8_0 = 8 };  // the ggml type ids
const char* kv_type_name(KvType t);
// "f32", "f16", "q8_0", "q4_0"; false for anything else.
bool kv_type_from_name(const std::string& name, KvType* out);
bool kv_type_quantized(KvType t);
// A stored type id (a session file's) that names a cache type.
bool kv_type_valid(uint32_t id);

// The element types of the keys and of the values, and the rotation of the quantized ones.
struct KvFormat {
  KvType k = KvType::F16;
  KvType v = KvType::F16;
  bool rotate = false;  // a Hadamard transform before quantizing (only quantized entries are rotated)

  KvFormat() = default;
  KvFormat(KvType both) : k(both), v(both) {}  // NOLINT: a cache of one type, unrotated
  KvFormat(KvType keys, KvType values, bool rotated) : k(keys), v(values), rotate(rotated) {}

  bool rotate_k() const { return rotate && kv_type_quantized(k); }
  bool rotate_v() const { return rotate && kv_type_quantized(v); }
  bool operator==(const KvFormat& o) const {
    return k == o.k && v == o.v && rotate_k() == o.rotate_k() && rotate_v() == o.rotate_v();
  }
  bool operator!=(const KvFormat& o) const { return !(*this == o); }
};
// "f16"; "q8_0/q4_0" where keys and values differ; "+rot" where the quantized ones are rotated.
std::string kv_format_name(const KvFormat& f);

namespace kv {

// Bytes of one entry of `dim` numbers in type t.
size_t entry_bytes(KvType t, int dim);
// Fails NOT_SUPPORTED where the format cannot hold a model's heads (Q4_0 needs an even size): every cache,
// on every backend, checks this when it is made.
void check_format(const KvFormat& f, int head_dim, int head_dim_v);

// n entries: src [n, dim] floats → dst [n, entry_bytes(t, dim)]; rotate: each row through the Hadamard
// transform first (a quantized type's rotation).
void encode(KvType t, bool rotate, const float* src, uint8_t* dst, int dim, int64_t n);
// The numbers stored: dst [n, dim], in the stored basis (rotated where the entries were).
void decode_stored(KvType t, const uint8_t* src, float* dst, int dim, int64_t n);
// The entries as the model made them: decode_stored, then the rotation undone.
void decode(KvType t, bool rotate, const uint8_t* src, float* dst, int dim, int64_t n);

// The same, one number at a time by the formulas above, for checking: slow and obviously right.
void encode_reference(KvType t, const float* src, uint8_t* dst, int dim);  // one entry, no rotation
float decode_reference(KvType t, const uint8_t* entry, int dim, int i);    // element i of one entry

}  // namespace kv
}  // namespace folio
