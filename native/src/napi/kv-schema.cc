#include "napi/kv-schema.h"

#include <cmath>
#include <type_traits>

#include "napi/common.h"
#include "napi/options.h"

namespace folio::napi {

kv::CompressOptions compress_options(Napi::Env env, const Napi::Object& o, const char* default_method) {
  const auto& rows = compress_option_rows();
  auto get = [&](const char* name) { return read_option(env, o, option_row(rows, name)); };
  kv::CompressOptions c;
  c.method = guard(env, [&] { return kv::parse_method(str_opt(env, o, "method", default_method)); });
  double budget = get("budget");
  if (std::isnan(budget) && c.method.selection == kv::Selection::Full) budget = 1;
  if (std::isnan(budget))
    throw js_error(env, "INVALID_ARGUMENT", "give a budget: a kept ratio such as 0.2 or tokens per head such as 512");
  guard(env, [&] { kv::set_budget(c, budget); });
  c.alpha = get("alpha");
  c.window = int32_t(get("window"));
  c.kernel = int32_t(get("kernel"));
  c.beta = int32_t(get("beta"));
  c.measure_loss = bool_opt(env, o, "measureLoss", false);
  guard(env, [&] { kv::validate(c); });
  return c;
}

ReadOptions read_options(Napi::Env env, const Napi::Object& o) {
  ReadOptions r;
  const Napi::Value chunk = o.Has("chunk") ? o.Get("chunk") : env.Undefined();
  if (chunk.IsString() && chunk.As<Napi::String>().Utf8Value() == "auto") r.chunk = ReadOptions::kAutoChunk;
  else if (!chunk.IsUndefined() && !chunk.IsString()) r.chunk = int32_t(num_opt(env, o, "chunk", 0, 0, 1 << 24));
  else if (!chunk.IsUndefined())
    throw js_error(env, "INVALID_ARGUMENT", "chunk must be 'auto' or a number of tokens (0: one pass)");
  r.rebase = bool_opt(env, o, "rebase", false);
  r.pack_positions = bool_opt(env, o, "packPositions", false);
  r.room = int32_t(num_opt(env, o, "room", 0, 0, 1 << 24));
  r.checkpoint = str_opt(env, o, "checkpoint", "");
  r.checkpoint_seconds = num_opt(env, o, "checkpointSeconds", r.checkpoint_seconds, 0, 1e9);
  return r;
}

namespace {

// The kinds of kv/stats.h's tables; each checks at compile time that its rows read the C++ type it means.
enum class Kind { integer, number, boolean, string, numberOrNull, stringOrNull, int32Array, layers, heads };

Napi::Object head_to_js(Napi::Env env, const kv::HeadStats& s);
Napi::Object layer_to_js(Napi::Env env, const kv::LayerStats& s);

template <typename T, typename F>
Napi::Array array_of(Napi::Env env, const std::vector<T>& v, F to_js) {
  Napi::Array a = Napi::Array::New(env, v.size());
  for (size_t i = 0; i < v.size(); i++) a.Set(uint32_t(i), to_js(env, v[i]));
  return a;
}

template <Kind K, typename T>
Napi::Value field_to_js(Napi::Env env, const T& v) {
  if constexpr (K == Kind::integer) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "an integer field reads an integer");
    return Napi::Number::New(env, double(v));
  } else if constexpr (K == Kind::number) {
    static_assert(std::is_same_v<T, double>, "a number field reads a double");
    return Napi::Number::New(env, v);
  } else if constexpr (K == Kind::boolean) {
    static_assert(std::is_same_v<T, bool>, "a boolean field reads a bool");
    return Napi::Boolean::New(env, v);
  } else if constexpr (K == Kind::string) {
    static_assert(std::is_same_v<T, std::string>, "a string field reads a std::string");
    return Napi::String::New(env, v);
  } else if constexpr (K == Kind::numberOrNull) {
    static_assert(std::is_same_v<T, std::optional<double>>, "a numberOrNull field reads an optional double");
    return v ? Napi::Value(Napi::Number::New(env, *v)) : env.Null();
  } else if constexpr (K == Kind::stringOrNull) {
    static_assert(std::is_same_v<T, std::optional<std::string>>, "a stringOrNull field reads an optional string");
    return v ? Napi::Value(Napi::String::New(env, *v)) : env.Null();
  } else if constexpr (K == Kind::int32Array) {
    static_assert(std::is_same_v<T, std::vector<int32_t>>, "an int32Array field reads a vector of int32");
    Napi::Int32Array a = Napi::Int32Array::New(env, v.size());
    std::copy(v.begin(), v.end(), a.Data());
    return a;
  } else if constexpr (K == Kind::layers) {
    static_assert(std::is_same_v<T, std::vector<kv::LayerStats>>, "a layers field reads LayerStats");
    return array_of(env, v, layer_to_js);
  } else {
    static_assert(std::is_same_v<T, std::vector<kv::HeadStats>>, "a heads field reads HeadStats");
    return array_of(env, v, head_to_js);
  }
}

#define FOLIO_STATS_SET(name, kind, expr) o.Set(name, field_to_js<Kind::kind>(env, expr));
#define FOLIO_STATS_KIND(name, kind, expr) o.Set(name, #kind);

Napi::Object head_to_js(Napi::Env env, const kv::HeadStats& s) {
  Napi::Object o = Napi::Object::New(env);
  FOLIO_HEAD_STATS_FIELDS(FOLIO_STATS_SET)
  return o;
}

Napi::Object layer_to_js(Napi::Env env, const kv::LayerStats& s) {
  Napi::Object o = Napi::Object::New(env);
  FOLIO_LAYER_STATS_FIELDS(FOLIO_STATS_SET)
  return o;
}

Napi::Value StatsSchema(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object r = Napi::Object::New(env);
  {
    Napi::Object o = Napi::Object::New(env);
    FOLIO_COMPRESSION_STATS_FIELDS(FOLIO_STATS_KIND)
    r.Set("compression", o);
  }
  {
    Napi::Object o = Napi::Object::New(env);
    FOLIO_LAYER_STATS_FIELDS(FOLIO_STATS_KIND)
    r.Set("layer", o);
  }
  {
    Napi::Object o = Napi::Object::New(env);
    FOLIO_HEAD_STATS_FIELDS(FOLIO_STATS_KIND)
    r.Set("head", o);
  }
  return r;
}

Napi::Value Methods(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return array_of(env, kv::method_table(), [](Napi::Env env, const kv::MethodSpec& m) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", m.name);
    o.Set("selection", kv::selection_name(m.selection));
    o.Set("schedule", kv::schedule_name(m.schedule));
    o.Set("allocator", kv::allocator_name(m.allocator));
    o.Set("scorer", kv::scorer_name(m.scorer));
    o.Set("label", m.label);
    o.Set("description", m.description);
    return o;
  });
}

}  // namespace

Napi::Object stats_to_js(Napi::Env env, const kv::CompressionStats& s) {
  Napi::Object o = Napi::Object::New(env);
  FOLIO_COMPRESSION_STATS_FIELDS(FOLIO_STATS_SET)
  return o;
}

void init_kv_schema(Napi::Env env, Napi::Object exports) {
  exports.Set("methods", Napi::Function::New(env, Methods, "methods"));
  exports.Set("statsSchema", Napi::Function::New(env, StatsSchema, "statsSchema"));
}

}  // namespace folio::napi
