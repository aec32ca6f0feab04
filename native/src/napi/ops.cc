// exports.ops: the quant kernels one call at a time, for the tests (OpsBinding in electron/engine/binding.ts).
// Every argument is checked before a kernel runs; inputs are copied into aligned native buffers and
// results copied into fresh JS arrays.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "napi/common.h"
#include "quant/quant.h"

namespace folio::napi {
namespace {

using quant::Isa;

[[noreturn]] void invalid(const std::string& message) { fail("INVALID_ARGUMENT", message); }

// A ggml type id with kernels; unknown ids and types without kernels are UNSUPPORTED_TYPE.
TensorType arg_type(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsNumber()) invalid("type must be a ggml type id (a number)");
  const double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v >= 0 && v < 4294967296.0 && v == std::floor(v))) invalid("type must be a non-negative integer");
  const TensorType type = TensorType(uint32_t(v));
  quant::kernels(type, Isa::Scalar);  // throws UNSUPPORTED_TYPE
  return type;
}

// Element count: a non-negative integer, a multiple of the type's block size.
int64_t arg_count(const Napi::CallbackInfo& info, size_t i, TensorType type) {
  if (info.Length() <= i || !info[i].IsNumber()) invalid("n must be a number");
  const double v = info[i].As<Napi::Number>().DoubleValue();
  if (!(v >= 0 && v <= 9007199254740991.0 && v == std::floor(v))) invalid("n must be a non-negative integer");
  const int64_t n = int64_t(v);
  const TypeInfo& ti = type_info(type);
  if (n % ti.block_size != 0) {
    invalid(strfmt("n = %lld is not a multiple of the %s block size %u", (long long)n, ti.name, ti.block_size));
  }
  return n;
}

// Optional ISA name; absent or undefined means the engine's default.
Isa arg_isa(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || info[i].IsUndefined()) return quant::best_isa();
  if (!info[i].IsString()) invalid("isa must be a string ('scalar', 'avx2', 'avx512' or 'neon')");
  const std::string name = info[i].As<Napi::String>().Utf8Value();
  for (int k = 0; k < quant::kIsaCount; ++k) {
    const Isa isa = Isa(k);
    if (name != quant::isa_name(isa)) continue;
    if (!quant::isa_available(isa)) invalid("ISA " + name + " is not available on this machine");
    return isa;
  }
  invalid("unknown ISA '" + name + "' (scalar, avx2, avx512 or neon)");
}

// A copy of a Uint8Array argument that must hold exactly `expect` bytes.
std::vector<uint8_t> arg_bytes(const Napi::CallbackInfo& info, size_t i, const char* what, size_t expect) {
  if (info.Length() <= i || !info[i].IsTypedArray() ||
      info[i].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    invalid(strfmt("%s must be a Uint8Array", what));
  }
  const Napi::Uint8Array a = info[i].As<Napi::Uint8Array>();
  if (a.ByteLength() != expect) {
    invalid(strfmt("%s holds %zu bytes, expected %zu", what, size_t(a.ByteLength()), expect));
  }
  std::vector<uint8_t> v(expect);
  if (expect) std::memcpy(v.data(), a.Data(), expect);
  return v;
}

Napi::Value isas(const Napi::CallbackInfo& info) {
  Napi::Array out = Napi::Array::New(info.Env());
  uint32_t k = 0;
  for (int i = 0; i < quant::kIsaCount; ++i) {
    if (quant::isa_available(Isa(i))) out.Set(k++, Napi::String::New(info.Env(), quant::isa_name(Isa(i))));
  }
  return out;
}

Napi::Value best_isa(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), quant::isa_name(quant::best_isa()));
}

Napi::Value vec_dot_type(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const TensorType type = arg_type(info, 0);
    return Napi::Number::New(info.Env(), double(uint32_t(quant::vec_dot_type(type))));
  });
}

// dequantize(type, data, n, isa?)
Napi::Value dequantize(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const TensorType type = arg_type(info, 0);
    const int64_t n = arg_count(info, 2, type);
    const Isa isa = arg_isa(info, 3);
    const std::vector<uint8_t> data = arg_bytes(info, 1, "data", row_bytes(type, n));
    const quant::Kernels& k = quant::kernels(type, isa);
    std::vector<float> out(static_cast<size_t>(n));
    if (n) k.dequantize_row(data.data(), out.data(), n);
    return copy_floats(info.Env(), out.data(), out.size());
  });
}

// quantize(type, x, isa?)
Napi::Value quantize(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const TensorType type = arg_type(info, 0);
    if (info.Length() <= 1 || !info[1].IsTypedArray() ||
        info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
      invalid("x must be a Float32Array");
    }
    const Napi::Float32Array xa = info[1].As<Napi::Float32Array>();
    const int64_t n = int64_t(xa.ElementLength());
    const TypeInfo& ti = type_info(type);
    if (n % ti.block_size != 0) {
      invalid(strfmt("x has %lld elements, not a multiple of the %s block size %u", (long long)n, ti.name, ti.block_size));
    }
    const Isa isa = arg_isa(info, 2);
    const quant::Kernels& k = quant::kernels(type, isa);
    if (!k.quantize_row) fail("UNSUPPORTED_TYPE", strfmt("no quantizer for %s", ti.name));
    std::vector<float> x(static_cast<size_t>(n));
    if (n) std::memcpy(x.data(), xa.Data(), size_t(n) * sizeof(float));
    std::vector<uint8_t> out(row_bytes(type, n));
    if (n) k.quantize_row(x.data(), out.data(), n);
    return copy_bytes(info.Env(), out.data(), out.size());
  });
}

// vecDot(type, w, x, n, isa?)
Napi::Value vec_dot(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    const TensorType type = arg_type(info, 0);
    const TensorType xtype = quant::vec_dot_type(type);  // throws UNSUPPORTED_TYPE for activation types
    const int64_t n = arg_count(info, 3, type);
    const Isa isa = arg_isa(info, 4);
    const std::vector<uint8_t> w = arg_bytes(info, 1, "w", row_bytes(type, n));
    const std::vector<uint8_t> x = arg_bytes(info, 2, "x", row_bytes(xtype, n));
    const quant::Kernels& k = quant::kernels(type, isa);
    if (!k.vec_dot) fail("UNSUPPORTED_TYPE", strfmt("no dot product for %s", type_name(type)));
    const float r = n ? k.vec_dot(n, w.data(), x.data()) : 0.0f;
    return Napi::Number::New(info.Env(), double(r));
  });
}

}  // namespace

void init_ops(Napi::Env env, Napi::Object exports) {
  Napi::Object ops = Napi::Object::New(env);
  ops.Set("isas", Napi::Function::New(env, isas, "isas"));
  ops.Set("bestIsa", Napi::Function::New(env, best_isa, "bestIsa"));
  ops.Set("vecDotType", Napi::Function::New(env, vec_dot_type, "vecDotType"));
  ops.Set("dequantize", Napi::Function::New(env, dequantize, "dequantize"));
  ops.Set("quantize", Napi::Function::New(env, quantize, "quantize"));
  ops.Set("vecDot", Napi::Function::New(env, vec_dot, "vecDot"));
  exports.Set("ops", ops);
}

}  // namespace folio::napi
