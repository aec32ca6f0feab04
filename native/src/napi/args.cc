// Reading and checking the arguments of binding calls.
#include "napi/common.h"

namespace folio::napi {

std::vector<int32_t> token_array(Napi::Env env, const Napi::Value& v, const char* what) {
  std::vector<int32_t> out;
  if (v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_int32_array) {
    Napi::Int32Array a = v.As<Napi::Int32Array>();
    out.assign(a.Data(), a.Data() + a.ElementLength());
    return out;
  }
  if (!v.IsArray())
    throw js_error(env, "INVALID_ARGUMENT", std::string(what) + " must be an Int32Array or an array of numbers");
  Napi::Array a = v.As<Napi::Array>();
  out.reserve(a.Length());
  for (uint32_t i = 0; i < a.Length(); i++) {
    Napi::Value e = a.Get(i);
    const double d = e.IsNumber() ? e.As<Napi::Number>().DoubleValue() : 0.5;
    if (d != double(int32_t(d))) throw js_error(env, "INVALID_ARGUMENT", std::string(what) + " must contain integers");
    out.push_back(int32_t(d));
  }
  return out;
}

Napi::Object opts_arg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() > i && info[i].IsObject()) return info[i].As<Napi::Object>();
  if (info.Length() > i && !info[i].IsUndefined())
    throw js_error(info.Env(), "INVALID_ARGUMENT", "options must be an object");
  return Napi::Object::New(info.Env());
}

double num_opt(Napi::Env env, const Napi::Object& o, const char* key, double def, double lo, double hi) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return def;
  if (!v.IsNumber()) throw js_error(env, "INVALID_ARGUMENT", std::string("option '") + key + "' must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= lo && d <= hi))
    throw js_error(env, "INVALID_ARGUMENT", strfmt("option '%s' = %g is out of range [%g, %g]", key, d, lo, hi));
  return d;
}

bool bool_opt(Napi::Env env, const Napi::Object& o, const char* key, bool def) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return def;
  if (!v.IsBoolean())
    throw js_error(env, "INVALID_ARGUMENT", std::string("option '") + key + "' must be true or false");
  return v.As<Napi::Boolean>().Value();
}

std::string str_opt(Napi::Env env, const Napi::Object& o, const char* key, const std::string& def) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) return def;
  if (!v.IsString()) throw js_error(env, "INVALID_ARGUMENT", std::string("option '") + key + "' must be a string");
  return v.As<Napi::String>().Utf8Value();
}

}  // namespace folio::napi
