// readGguf(path): the header of a GGUF file (metadata and tensor table) without touching tensor data;
// model discovery uses it, and the broken-file tests reach the reader through it.
// ggufMetadataRules(): the keys a model load checks, with their types and ranges (gguf/metadata-rules.h), for
// the test that holds the TypeScript copy of the table (electron/models/gguf-metadata-rules.ts) to it.
#include "gguf/gguf.h"
#include "gguf/metadata-rules.h"
#include "napi/common.h"

namespace folio::napi {

namespace {

Napi::Value to_js(Napi::Env env, const gguf::Value& v, bool full_arrays);

Napi::Value array_to_js(Napi::Env env, const gguf::Array& a, bool full) {
  if (!full) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("arrayOf", gguf::value_type_name(a.type));
    o.Set("length", double(a.count));
    return o;
  }
  Napi::Array out = Napi::Array::New(env, size_t(a.count));
  for (uint64_t i = 0; i < a.count; i++) {
    Napi::Value e;
    if (a.type == gguf::ValueType::STRING)
      e = Napi::String::New(env, a.strings[size_t(i)].data(), a.strings[size_t(i)].size());
    else if (a.type == gguf::ValueType::ARRAY) e = to_js(env, a.arrays[size_t(i)], full);
    else if (a.type == gguf::ValueType::BOOL) e = Napi::Boolean::New(env, gguf::array_number(a, i) != 0);
    else e = Napi::Number::New(env, gguf::array_number(a, i));
    out.Set(uint32_t(i), e);
  }
  return out;
}

Napi::Value to_js(Napi::Env env, const gguf::Value& v, bool full) {
  switch (v.type) {
    case gguf::ValueType::STRING: return Napi::String::New(env, v.str.data(), v.str.size());
    case gguf::ValueType::BOOL: return Napi::Boolean::New(env, v.u != 0);
    case gguf::ValueType::FLOAT32:
    case gguf::ValueType::FLOAT64: return Napi::Number::New(env, v.f);
    case gguf::ValueType::UINT64:
      return v.u > (uint64_t(1) << 53) ? Napi::BigInt::New(env, uint64_t(v.u)).As<Napi::Value>()
                                       : Napi::Number::New(env, double(v.u));
    case gguf::ValueType::INT64:
      return (v.i > (int64_t(1) << 53) || v.i < -(int64_t(1) << 53))
                 ? Napi::BigInt::New(env, int64_t(v.i)).As<Napi::Value>()
                 : Napi::Number::New(env, double(v.i));
    case gguf::ValueType::ARRAY: return array_to_js(env, *v.arr, full);
    default: return Napi::Number::New(env, double(v.as_int()));
  }
}

Napi::Object header_object(Napi::Env env, const gguf::File& file, bool full);

Napi::Value ReadGguf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw js_error(env, "INVALID_ARGUMENT", "readGguf(path) needs a path");
  bool full = false;
  if (info.Length() > 1 && info[1].IsObject()) {
    Napi::Value a = info[1].As<Napi::Object>().Get("arrays");
    full = a.IsString() && a.As<Napi::String>().Utf8Value() == "full";
  }
  auto file = guard(env, [&] { return gguf::File::open(info[0].As<Napi::String>().Utf8Value()); });
  return guard(env, [&] { return header_object(env, *file, full); });
}

Napi::Object header_object(Napi::Env env, const gguf::File& file, bool full) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("version", file.version());
  o.Set("alignment", file.alignment());
  o.Set("dataOffset", double(file.data_offset()));
  o.Set("fileBytes", double(file.file_size()));
  Napi::Object md = Napi::Object::New(env);
  Napi::Object types = Napi::Object::New(env);
  for (const auto& [k, v] : file.metadata()) {
    md.Set(k, to_js(env, v, full));
    types.Set(k, gguf::value_type_name(v.type));
  }
  o.Set("metadata", md);
  o.Set("metadataTypes", types);
  Napi::Array ts = Napi::Array::New(env, file.tensors().size());
  uint32_t i = 0;
  for (const auto& t : file.tensors()) {
    Napi::Object to = Napi::Object::New(env);
    to.Set("name", t.name);
    Napi::Array dims = Napi::Array::New(env, t.n_dims);
    for (uint32_t d = 0; d < t.n_dims; d++) dims.Set(d, double(t.ne[d]));
    to.Set("dims", dims);
    to.Set("type", type_name(t.type));
    to.Set("typeId", uint32_t(t.type));
    to.Set("offset", double(t.offset));
    to.Set("bytes", double(t.n_bytes));
    ts.Set(i++, to);
  }
  o.Set("tensors", ts);
  return o;
}

// [{ key, kind, range? }] in the table's order; kind as gguf::kind_name spells it; range { min, max, minOpen,
// text } for a bounded key.
Napi::Value MetadataRules(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto& rules = gguf::metadata_rules();
  Napi::Array out = Napi::Array::New(env, rules.size());
  for (size_t i = 0; i < rules.size(); i++) {
    Napi::Object r = Napi::Object::New(env);
    r.Set("key", rules[i].key);
    r.Set("kind", gguf::kind_name(rules[i].kind));
    if (rules[i].bounded()) {
      Napi::Object range = Napi::Object::New(env);
      range.Set("min", rules[i].min);
      range.Set("max", rules[i].max);
      range.Set("minOpen", rules[i].min_open);
      range.Set("text", rules[i].range_text());
      r.Set("range", range);
    }
    out.Set(uint32_t(i), r);
  }
  return out;
}

}  // namespace

void init_gguf(Napi::Env env, Napi::Object exports) {
  exports.Set("readGguf", Napi::Function::New(env, ReadGguf, "readGguf"));
  exports.Set("ggufMetadataRules", Napi::Function::New(env, MetadataRules, "ggufMetadataRules"));
}

}  // namespace folio::napi
