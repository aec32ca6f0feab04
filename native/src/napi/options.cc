#include "napi/options.h"

#include <cmath>
#include <string>

#include "kv/method.h"
#include "napi/common.h"

namespace folio::napi {

namespace {

constexpr double kNone = NAN;

OptionRow number(const char* name, double min, double max, double def, bool min_open = false) {
  return {name, false, min, max, min_open, false, def};
}
OptionRow integer(const char* name, double min, double max, double def, bool odd = false) {
  return {name, true, min, max, false, odd, def};
}

// The range as the error message writes it: "(0, 16777216]", "[1, 1023], odd".
std::string range_text(const OptionRow& r) {
  return strfmt("%s%g, %g]%s", r.min_open ? "(" : "[", r.min, r.max, r.odd ? ", odd" : "");
}

}  // namespace

const std::vector<OptionRow>& compress_option_rows() {
  static const kv::CompressOptions d;
  static const std::vector<OptionRow> rows = {
      // A kept ratio (<= 1) or whole tokens per head (> 1): kv::set_budget reads it.
      number("budget", 0, 1 << 24, kNone, true), number("alpha", 0, 1, d.alpha),
      integer("window", 1, 1 << 20, d.window),   integer("kernel", 1, (1 << 10) - 1, d.kernel, true),
      integer("beta", 1, 1 << 20, d.beta),
  };
  return rows;
}

const std::vector<OptionRow>& sampling_option_rows() {
  static const SamplingParams d;
  static const std::vector<OptionRow> rows = {
      number("temperature", 0, 10, d.temperature),
      integer("topK", 0, 1 << 30, d.top_k),
      number("topP", 1e-9, 1, d.top_p),
      number("minP", 0, 1, d.min_p),
      number("repeatPenalty", 1e-3, 100, d.repeat_penalty),
      integer("repeatLastN", -1, 1 << 30, d.repeat_last_n),
      integer("seed", 0, 9007199254740991.0, double(d.seed)),  // 2^53 - 1: every integer a JS number holds
  };
  return rows;
}

const OptionRow& option_row(const std::vector<OptionRow>& rows, const char* name) {
  for (const OptionRow& r : rows)
    if (std::string(r.name) == name) return r;
  fail("INTERNAL", std::string("no option row named ") + name);
}

double read_option(Napi::Env env, const Napi::Object& o, const OptionRow& row) {
  Napi::Value v = o.Get(row.name);
  if (v.IsUndefined()) return row.def;
  if (!v.IsNumber()) throw js_error(env, "INVALID_ARGUMENT", std::string("option '") + row.name + "' must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  const bool above_min = row.min_open ? d > row.min : d >= row.min;
  const bool whole = !row.integer || d == std::floor(d);
  const bool odd = !row.odd || std::fmod(d, 2) == 1;
  if (!(above_min && d <= row.max) || !whole || !odd)
    throw js_error(env, "INVALID_ARGUMENT",
                   strfmt("option '%s' = %g is out of range: it must be %s in %s", row.name, d,
                          row.integer ? "an integer" : "a number", range_text(row).c_str()));
  return d;
}

SamplingParams sampling_params(Napi::Env env, const Napi::Object& o) {
  const auto& rows = sampling_option_rows();
  auto get = [&](const char* name) { return read_option(env, o, option_row(rows, name)); };
  SamplingParams sp;
  sp.temperature = float(get("temperature"));
  sp.top_k = int32_t(get("topK"));
  sp.top_p = float(get("topP"));
  sp.min_p = float(get("minP"));
  sp.repeat_penalty = float(get("repeatPenalty"));
  sp.repeat_last_n = int32_t(get("repeatLastN"));
  sp.seed = uint64_t(get("seed"));
  return sp;
}

namespace {

Napi::Array rows_to_js(Napi::Env env, const std::vector<OptionRow>& rows) {
  Napi::Array a = Napi::Array::New(env, rows.size());
  for (size_t i = 0; i < rows.size(); i++) {
    const OptionRow& r = rows[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", r.name);
    o.Set("integer", r.integer);
    o.Set("min", r.min);
    o.Set("max", r.max);
    o.Set("minOpen", r.min_open);
    o.Set("odd", r.odd);
    o.Set("default", std::isnan(r.def) ? env.Null() : Napi::Value(Napi::Number::New(env, r.def)));
    a.Set(uint32_t(i), o);
  }
  return a;
}

Napi::Value OptionsSchema(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object r = Napi::Object::New(env);
  r.Set("compress", rows_to_js(env, compress_option_rows()));
  r.Set("sampling", rows_to_js(env, sampling_option_rows()));
  return r;
}

}  // namespace

void init_options(Napi::Env env, Napi::Object exports) {
  exports.Set("optionsSchema", Napi::Function::New(env, OptionsSchema, "optionsSchema"));
}

}  // namespace folio::napi
