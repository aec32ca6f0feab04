// GGUF reader (versions 2 and 3, little-endian): metadata of every value type, the tensor table and the
// data section, all read in place from a memory map. Every count, length and offset is checked against
// the file before it is used, so a broken or hostile file ends in an Error naming the problem, never in a
// crash, a hang or an allocation larger than the file.
// Layout: "GGUF" u32 version, u64 n_tensors, u64 n_kv, n_kv × (string key, u32 type, value),
// n_tensors × (string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset), padding to the alignment,
// then the tensor data; strings are u64 length + bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped-file.h"
#include "quant/types.h"

namespace folio::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
const char* value_type_name(ValueType t);

struct Value;

struct Array {
  ValueType type = ValueType::UINT8;  // element type
  uint64_t count = 0;
  const uint8_t* data = nullptr;          // raw little-endian elements (scalar element types)
  std::vector<std::string_view> strings;  // STRING elements (views into the map)
  std::vector<Value> arrays;              // ARRAY elements (nested arrays)
};

struct Value {
  ValueType type = ValueType::UINT8;
  uint64_t u = 0;  // UINT*, BOOL
  int64_t i = 0;   // INT*
  double f = 0;    // FLOAT*
  std::string_view str;
  std::shared_ptr<Array> arr;

  bool is_integer() const;
  bool is_number() const { return is_integer() || type == ValueType::FLOAT32 || type == ValueType::FLOAT64; }
  int64_t as_int() const;    // any integer or bool (a uint64 above INT64_MAX wraps: check with Kind::Integer first)
  double as_double() const;  // any number
};

// What a metadata key must hold. One rule for every read: the typed getters below, the whole-file check of
// gguf/metadata-rules.h, and electron/models/gguf-metadata-rules.ts (the same rule in TypeScript).
//   String, Bool: that type. Integer: any integer type (not bool) whose value fits an int64.
//   Number: any integer or float type (not bool). The arrays: an array whose element type is of that kind
//   (StringArray: strings; IntegerArray: integer types; NumberArray: integer or float types).
enum class Kind { String, Integer, Number, Bool, StringArray, IntegerArray, NumberArray };
const char* kind_name(Kind k);  // "string", "integer", ..., "number array": the names the TS table uses
bool value_matches(const Value& v, Kind k);
// "metadata key 'K' should be <kind> but is <what v is>", the message of every wrong-typed key.
std::string wrong_type_message(std::string_view key, const Value& v, Kind k);

struct TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the row length (fastest-varying)
  TensorType type = TensorType::F32;
  uint64_t offset = 0;  // from the start of the data section
  int64_t n_elements = 0;
  size_t n_bytes = 0;
  const uint8_t* data = nullptr;
  int64_t rows() const { return n_elements / ne[0]; }
};

class File {
 public:
  // Maps and parses `path`. Throws folio::Error (codes GGUF_*, FILE_*).
  static std::unique_ptr<File> open(const std::string& path);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }
  size_t file_size() const { return map_->size(); }
  const std::string& path() const { return map_->path(); }
  const uint8_t* base() const { return map_->data(); }
  const MappedFile& mapping() const { return *map_; }

  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

  // Typed getters: the value of `key` when it matches `kind` (value_matches), nullptr when the key is absent,
  // and an Error with `code` (wrong_type_message: the key, the type found, the type expected) when it holds
  // anything else. Every metadata read of the engine goes through them.
  const Value* get(std::string_view key, Kind kind, const char* code = "GGUF_TYPE") const;
  const Array* get_array(std::string_view key, Kind kind, const char* code = "GGUF_TYPE") const;
  // The same for single values; the *_or forms return the default when the key is absent, the others
  // throw GGUF_MISSING_KEY.
  std::string get_string(std::string_view key) const;
  std::string get_string_or(std::string_view key, std::string_view def) const;
  int64_t get_int(std::string_view key) const;
  int64_t get_int_or(std::string_view key, int64_t def) const;
  double get_float_or(std::string_view key, double def) const;
  bool get_bool_or(std::string_view key, bool def) const;

 private:
  File() = default;
  void parse();
  std::unique_ptr<MappedFile> map_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

// Reads element i of a scalar array as a number (any integer, float or bool element type).
double array_number(const Array& a, uint64_t i);
// Reads element i of an integer array; a uint64 above INT64_MAX saturates there (no float round trip).
int64_t array_integer(const Array& a, uint64_t i);

}  // namespace folio::gguf
