#include "gguf/gguf.h"

#include <cstring>

#include "core/error.h"

namespace folio::gguf {

namespace {

constexpr uint32_t kMaxNestedArrayDepth = 8;
constexpr uint32_t kMaxDims = 4;
// A metadata key or a tensor name longer than this is refused (GGUF_BAD_LENGTH), by electron/models/gguf-header.ts
// too, so that the models page and the engine agree on every file.
constexpr uint64_t kMaxNameBytes = 65535;

size_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL: return 1;
    case ValueType::UINT16:
    case ValueType::INT16: return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32: return 4;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64: return 8;
    default: return 0;
  }
}

// Smallest number of bytes one element of this type can occupy in a file: bounds counts before any
// allocation, so a count can never ask for more memory than the file could justify.
size_t min_encoded_size(ValueType t) {
  if (t == ValueType::STRING) return 8;
  if (t == ValueType::ARRAY) return 12;
  return scalar_size(t);
}

bool valid_value_type(uint32_t t) { return t <= uint32_t(ValueType::FLOAT64); }

template <typename T>
T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;  // GGUF v2/v3 as read here is little-endian, as is every host Folio supports
}

struct Cursor {
  const uint8_t* base;
  size_t pos;
  size_t size;
  const std::string& path;

  size_t remaining() const { return size - pos; }

  [[noreturn]] void truncated(const std::string& what, size_t need) const {
    fail("GGUF_TRUNCATED", strfmt("%s: file is truncated: reading %s needs %zu bytes at offset %zu, but the file "
                                  "has only %zu bytes",
                                  path.c_str(), what.c_str(), need, pos, size));
  }
  const uint8_t* take(size_t n, const std::string& what) {
    if (n > remaining()) truncated(what, n);
    const uint8_t* p = base + pos;
    pos += n;
    return p;
  }
  uint32_t u32(const std::string& what) { return load_le<uint32_t>(take(4, what)); }
  uint64_t u64(const std::string& what) { return load_le<uint64_t>(take(8, what)); }
  // `max`: the longest the string may be (a key or a tensor name: kMaxNameBytes; the TS reader's limit too).
  std::string_view str(const std::string& what, uint64_t max = UINT64_MAX) {
    const uint64_t n = u64("the length of " + what);
    if (n > remaining())
      fail("GGUF_BAD_LENGTH", strfmt("%s: %s claims a length of %llu bytes at offset %zu, but only %zu bytes remain "
                                     "in the file",
                                     path.c_str(), what.c_str(), (unsigned long long)n, pos, remaining()));
    if (n > max)
      fail("GGUF_BAD_LENGTH", strfmt("%s: %s is %llu bytes long, more than the %llu allowed", path.c_str(),
                                     what.c_str(), (unsigned long long)n, (unsigned long long)max));
    return std::string_view(reinterpret_cast<const char*>(take(size_t(n), what)), size_t(n));
  }
};

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80)) out += (c >= 32 && c < 127) ? c : '?';
  if (s.size() > 80) out += "...";
  return out;
}

void read_value(Cursor& c, ValueType type, Value& v, const std::string& what, uint32_t depth);

void read_array(Cursor& c, Value& v, const std::string& what, uint32_t depth) {
  if (depth >= kMaxNestedArrayDepth)
    fail("GGUF_BAD_VALUE",
         strfmt("%s: %s nests arrays more than %u deep", c.path.c_str(), what.c_str(), kMaxNestedArrayDepth));
  auto arr = std::make_shared<Array>();
  const uint32_t et = c.u32("the element type of " + what);
  if (!valid_value_type(et))
    fail("GGUF_BAD_VALUE_TYPE", strfmt("%s: %s has unknown element type %u", c.path.c_str(), what.c_str(), et));
  arr->type = ValueType(et);
  arr->count = c.u64("the element count of " + what);
  const size_t min_size = min_encoded_size(arr->type);
  if (arr->count > c.remaining() / min_size)
    fail("GGUF_BAD_COUNT",
         strfmt("%s: %s claims %llu elements of type %s, more than the %zu bytes left in the file can hold",
                c.path.c_str(), what.c_str(), (unsigned long long)arr->count, value_type_name(arr->type),
                c.remaining()));
  if (arr->type == ValueType::STRING) {
    arr->strings.reserve(size_t(arr->count));
    for (uint64_t i = 0; i < arr->count; i++) arr->strings.push_back(c.str(what + " element " + std::to_string(i)));
  } else if (arr->type == ValueType::ARRAY) {
    arr->arrays.resize(size_t(arr->count));
    for (uint64_t i = 0; i < arr->count; i++) {
      arr->arrays[size_t(i)].type = ValueType::ARRAY;
      read_array(c, arr->arrays[size_t(i)], what + " element " + std::to_string(i), depth + 1);
    }
  } else {
    arr->data = c.take(size_t(arr->count) * min_size, "the elements of " + what);
    if (arr->type == ValueType::BOOL)
      for (uint64_t i = 0; i < arr->count; i++)
        if (arr->data[i] > 1)
          fail("GGUF_BAD_VALUE", strfmt("%s: %s element %llu is a bool with value %u", c.path.c_str(), what.c_str(),
                                        (unsigned long long)i, arr->data[i]));
  }
  v.arr = std::move(arr);
}

void read_value(Cursor& c, ValueType type, Value& v, const std::string& what, uint32_t depth) {
  v.type = type;
  switch (type) {
    case ValueType::UINT8: v.u = *c.take(1, what); break;
    case ValueType::INT8: v.i = int8_t(*c.take(1, what)); break;
    case ValueType::UINT16: v.u = load_le<uint16_t>(c.take(2, what)); break;
    case ValueType::INT16: v.i = load_le<int16_t>(c.take(2, what)); break;
    case ValueType::UINT32: v.u = load_le<uint32_t>(c.take(4, what)); break;
    case ValueType::INT32: v.i = load_le<int32_t>(c.take(4, what)); break;
    case ValueType::UINT64: v.u = load_le<uint64_t>(c.take(8, what)); break;
    case ValueType::INT64: v.i = load_le<int64_t>(c.take(8, what)); break;
    case ValueType::FLOAT32: v.f = load_le<float>(c.take(4, what)); break;
    case ValueType::FLOAT64: v.f = load_le<double>(c.take(8, what)); break;
    case ValueType::BOOL: {
      uint8_t b = *c.take(1, what);
      if (b > 1) fail("GGUF_BAD_VALUE", strfmt("%s: %s is a bool with value %u", c.path.c_str(), what.c_str(), b));
      v.u = b;
      break;
    }
    case ValueType::STRING: v.str = c.str(what); break;
    case ValueType::ARRAY: read_array(c, v, what, depth); break;
  }
}

}  // namespace

const char* value_type_name(ValueType t) {
  static const char* names[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                "bool",  "string", "array",  "uint64", "int64",  "float64"};
  return uint32_t(t) <= 12 ? names[uint32_t(t)] : "unknown";
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::UINT16:
    case ValueType::INT16:
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::UINT64:
    case ValueType::INT64: return true;
    default: return false;
  }
}

int64_t Value::as_int() const {
  switch (type) {
    case ValueType::UINT8:
    case ValueType::UINT16:
    case ValueType::UINT32:
    case ValueType::UINT64:
    case ValueType::BOOL: return int64_t(u);
    case ValueType::INT8:
    case ValueType::INT16:
    case ValueType::INT32:
    case ValueType::INT64: return i;
    default: return 0;
  }
}

double Value::as_double() const {
  if (type == ValueType::FLOAT32 || type == ValueType::FLOAT64) return f;
  if (type == ValueType::UINT64) return double(u);  // as_int would wrap values above INT64_MAX
  return double(as_int());
}

double array_number(const Array& a, uint64_t i) {
  const uint8_t* p = a.data + i * scalar_size(a.type);
  switch (a.type) {
    case ValueType::UINT8: return *p;
    case ValueType::INT8: return int8_t(*p);
    case ValueType::BOOL: return *p;
    case ValueType::UINT16: return load_le<uint16_t>(p);
    case ValueType::INT16: return load_le<int16_t>(p);
    case ValueType::UINT32: return load_le<uint32_t>(p);
    case ValueType::INT32: return load_le<int32_t>(p);
    case ValueType::UINT64: return double(load_le<uint64_t>(p));
    case ValueType::INT64: return double(load_le<int64_t>(p));
    case ValueType::FLOAT32: return load_le<float>(p);
    case ValueType::FLOAT64: return load_le<double>(p);
    default: return 0;
  }
}

int64_t array_integer(const Array& a, uint64_t i) {
  const uint8_t* p = a.data + i * scalar_size(a.type);
  switch (a.type) {
    case ValueType::UINT64: {
      const uint64_t u = load_le<uint64_t>(p);
      return u > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(u);
    }
    case ValueType::INT64: return load_le<int64_t>(p);
    case ValueType::FLOAT32:
    case ValueType::FLOAT64: return 0;            // not an integer array (Kind::IntegerArray)
    default: return int64_t(array_number(a, i));  // every other element type fits a double exactly
  }
}

std::unique_ptr<File> File::open(const std::string& path) {
  std::unique_ptr<File> f(new File());
  f->map_ = std::make_unique<MappedFile>(path);
  f->parse();
  return f;
}

void File::parse() {
  const std::string& path = map_->path();
  Cursor c{map_->data(), 0, map_->size(), path};
  if (c.size < 4 || std::memcmp(c.base, "GGUF", 4) != 0) {
    std::string got = c.size < 4 ? "a file of " + std::to_string(c.size) + " bytes"
                                 : "'" + printable(std::string_view(reinterpret_cast<const char*>(c.base), 4)) + "'";
    fail("GGUF_BAD_MAGIC", path + " is not a GGUF file: it should start with 'GGUF' but starts with " + got);
  }
  c.pos = 4;
  version_ = c.u32("the version");
  if (version_ == 1)
    fail("GGUF_VERSION", path + ": GGUF version 1 is obsolete and not supported (versions 2 and 3 are)");
  if (version_ != 2 && version_ != 3) {
    if ((version_ & 0xffff) == 0 && (version_ >> 24) <= 3)
      fail("GGUF_VERSION", path + ": big-endian GGUF files are not supported");
    fail("GGUF_VERSION",
         strfmt("%s: unsupported GGUF version %u (versions 2 and 3 are supported)", path.c_str(), version_));
  }
  const uint64_t n_tensors = c.u64("the tensor count");
  const uint64_t n_kv = c.u64("the metadata count");
  // A key-value pair takes at least 8 (key length) + 4 (type) + 1 (value) bytes.
  if (n_kv > c.remaining() / 13)
    fail("GGUF_BAD_COUNT",
         strfmt("%s: the header claims %llu metadata entries, more than the file's %zu bytes can hold", path.c_str(),
                (unsigned long long)n_kv, c.size));
  // A tensor description takes at least 8 (name length) + 4 (dims) + 4 (type) + 8 (offset) bytes.
  if (n_tensors > c.remaining() / 24)
    fail("GGUF_BAD_COUNT", strfmt("%s: the header claims %llu tensors, more than the file's %zu bytes can hold",
                                  path.c_str(), (unsigned long long)n_tensors, c.size));

  kv_.reserve(size_t(n_kv));
  for (uint64_t k = 0; k < n_kv; k++) {
    const std::string idx = "metadata entry " + std::to_string(k);
    std::string key(c.str("the key of " + idx, kMaxNameBytes));
    const uint32_t t = c.u32("the value type of '" + printable(key) + "'");
    if (!valid_value_type(t))
      fail("GGUF_BAD_VALUE_TYPE",
           strfmt("%s: metadata key '%s' has unknown value type %u", path.c_str(), printable(key).c_str(), t));
    Value v;
    read_value(c, ValueType(t), v, "metadata value '" + printable(key) + "'", 0);
    if (kv_index_.count(key)) fail("GGUF_DUPLICATE", path + ": duplicate metadata key '" + printable(key) + "'");
    kv_index_.emplace(key, kv_.size());
    kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const Value* a = find("general.alignment")) {
    if (a->type != ValueType::UINT32)
      fail("GGUF_ALIGNMENT", path + ": general.alignment must be a uint32, not " + value_type_name(a->type));
    if (a->u == 0 || (a->u & (a->u - 1)) != 0)
      fail("GGUF_ALIGNMENT",
           strfmt("%s: general.alignment %llu is not a power of two", path.c_str(), (unsigned long long)a->u));
    alignment_ = uint32_t(a->u);
  }

  tensors_.reserve(size_t(n_tensors));
  for (uint64_t k = 0; k < n_tensors; k++) {
    TensorInfo ti;
    ti.name = std::string(c.str("the name of tensor " + std::to_string(k), kMaxNameBytes));
    const std::string what = "tensor '" + printable(ti.name) + "'";
    ti.n_dims = c.u32("the dimension count of " + what);
    if (ti.n_dims == 0 || ti.n_dims > kMaxDims)
      fail("GGUF_BAD_TENSOR",
           strfmt("%s: %s has %u dimensions (1 to %u allowed)", path.c_str(), what.c_str(), ti.n_dims, kMaxDims));
    for (uint32_t d = 0; d < ti.n_dims; d++) {
      const uint64_t ne = c.u64("dimension " + std::to_string(d) + " of " + what);
      if (ne > uint64_t(INT64_MAX))
        fail("GGUF_BAD_TENSOR", strfmt("%s: dimension %u of %s is %llu, too large", path.c_str(), d, what.c_str(),
                                       (unsigned long long)ne));
      ti.ne[d] = int64_t(ne);
    }
    const uint32_t type = c.u32("the type of " + what);
    const TypeInfo* info = type_info(type);
    if (!info || info->internal)
      fail("GGUF_BAD_TENSOR_TYPE", strfmt("%s: %s has unknown tensor type %u", path.c_str(), what.c_str(), type));
    ti.type = TensorType(type);
    ti.offset = c.u64("the data offset of " + what);

    int64_t n = 1;
    for (int d = 0; d < 4; d++)
      if (__builtin_mul_overflow(n, ti.ne[d], &n))
        fail("GGUF_BAD_TENSOR", strfmt("%s: the element count of %s overflows", path.c_str(), what.c_str()));
    ti.n_elements = n;
    if (ti.ne[0] % info->block_size != 0)
      fail("GGUF_BAD_TENSOR", strfmt("%s: %s has rows of %lld elements, not a multiple of the %s block size %u",
                                     path.c_str(), what.c_str(), (long long)ti.ne[0], info->name, info->block_size));
    uint64_t bytes;
    if (__builtin_mul_overflow(uint64_t(n / info->block_size), uint64_t(info->type_size), &bytes) || bytes > SIZE_MAX)
      fail("GGUF_BAD_TENSOR", strfmt("%s: the byte size of %s overflows", path.c_str(), what.c_str()));
    ti.n_bytes = size_t(bytes);
    if (ti.offset % alignment_ != 0)
      fail("GGUF_ALIGNMENT", strfmt("%s: %s has data offset %llu, not a multiple of the alignment %u", path.c_str(),
                                    what.c_str(), (unsigned long long)ti.offset, alignment_));
    if (tensor_index_.count(ti.name))
      fail("GGUF_DUPLICATE", path + ": duplicate tensor name '" + printable(ti.name) + "'");
    tensor_index_.emplace(ti.name, tensors_.size());
    tensors_.push_back(std::move(ti));
  }

  // The data section starts at the next multiple of the alignment.
  const size_t pad = (alignment_ - c.pos % alignment_) % alignment_;
  data_offset_ = c.pos + pad;
  if (n_tensors > 0 && data_offset_ > c.size)
    fail("GGUF_TRUNCATED", strfmt("%s: file is truncated: the tensor data should start at offset %zu, past the end "
                                  "of the file (%zu bytes)",
                                  path.c_str(), data_offset_, c.size));
  for (TensorInfo& ti : tensors_) {
    const uint64_t avail = c.size - data_offset_;
    if (ti.offset > avail || ti.n_bytes > avail - ti.offset)
      fail("GGUF_TENSOR_OUT_OF_FILE",
           strfmt("%s: the data of tensor '%s' (%zu bytes at offset %llu) lies outside the file: the data section has "
                  "%llu bytes",
                  path.c_str(), printable(ti.name).c_str(), ti.n_bytes, (unsigned long long)ti.offset,
                  (unsigned long long)avail));
    ti.data = c.base + data_offset_ + ti.offset;
  }
}

const Value* File::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::String: return "string";
    case Kind::Integer: return "integer";
    case Kind::Number: return "number";
    case Kind::Bool: return "bool";
    case Kind::StringArray: return "string array";
    case Kind::IntegerArray: return "integer array";
    case Kind::NumberArray: return "number array";
  }
  return "?";
}

namespace {

bool integer_type(ValueType t) {
  Value v;
  v.type = t;
  return v.is_integer();
}

bool float_type(ValueType t) { return t == ValueType::FLOAT32 || t == ValueType::FLOAT64; }

// A uint64 the int64 an integer is read into cannot hold.
bool beyond_int64(const Value& v) { return v.type == ValueType::UINT64 && v.u > uint64_t(INT64_MAX); }

const char* kind_description(Kind k) {
  switch (k) {
    case Kind::String: return "a string";
    case Kind::Integer: return "an integer";
    case Kind::Number: return "a number";
    case Kind::Bool: return "a bool";
    case Kind::StringArray: return "an array of strings";
    case Kind::IntegerArray: return "an array of integers";
    case Kind::NumberArray: return "an array of numbers";
  }
  return "?";
}

}  // namespace

bool value_matches(const Value& v, Kind k) {
  const bool array = v.type == ValueType::ARRAY && v.arr;
  switch (k) {
    case Kind::String: return v.type == ValueType::STRING;
    case Kind::Integer: return v.is_integer() && !beyond_int64(v);
    case Kind::Number: return v.is_number();
    case Kind::Bool: return v.type == ValueType::BOOL;
    case Kind::StringArray: return array && v.arr->type == ValueType::STRING;
    case Kind::IntegerArray: return array && integer_type(v.arr->type);
    case Kind::NumberArray: return array && (integer_type(v.arr->type) || float_type(v.arr->type));
  }
  return false;
}

std::string wrong_type_message(std::string_view key, const Value& v, Kind k) {
  std::string found = value_type_name(v.type);
  if (v.type == ValueType::ARRAY && v.arr) found = std::string("an array of ") + value_type_name(v.arr->type);
  else if (beyond_int64(v)) found = strfmt("uint64 %llu, beyond the int64 range", (unsigned long long)v.u);
  return "metadata key '" + printable(key) + "' should be " + kind_description(k) + " but is " + found;
}

const Value* File::get(std::string_view key, Kind kind, const char* code) const {
  const Value* v = find(key);
  if (v && !value_matches(*v, kind)) fail(code, path() + ": " + wrong_type_message(key, *v, kind));
  return v;
}

const Array* File::get_array(std::string_view key, Kind kind, const char* code) const {
  const Value* v = get(key, kind, code);
  return v ? v->arr.get() : nullptr;
}

static const Value& required(const File& f, std::string_view key, Kind kind) {
  const Value* v = f.get(key, kind);
  if (!v) fail("GGUF_MISSING_KEY", f.path() + ": required metadata key '" + std::string(key) + "' is missing");
  return *v;
}

std::string File::get_string(std::string_view key) const { return std::string(required(*this, key, Kind::String).str); }

std::string File::get_string_or(std::string_view key, std::string_view def) const {
  const Value* v = get(key, Kind::String);
  return std::string(v ? v->str : def);
}

int64_t File::get_int(std::string_view key) const { return required(*this, key, Kind::Integer).as_int(); }

int64_t File::get_int_or(std::string_view key, int64_t def) const {
  const Value* v = get(key, Kind::Integer);
  return v ? v->as_int() : def;
}

double File::get_float_or(std::string_view key, double def) const {
  const Value* v = get(key, Kind::Number);
  return v ? v->as_double() : def;
}

bool File::get_bool_or(std::string_view key, bool def) const {
  const Value* v = get(key, Kind::Bool);
  return v ? v->u != 0 : def;
}

}  // namespace folio::gguf
