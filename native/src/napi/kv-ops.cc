// The pieces of KV compression as plain functions, for unit tests with hand-computed cases:
// exports.kv = { windowScores, maxPool, adaCaps, topTokens, pyramidSchedule, resolveBudget }.
#include "kv/allocator.h"
#include "kv/compressor.h"
#include "kv/method.h"
#include "kv/schedule.h"
#include "kv/scorer.h"
#include "napi/common.h"
#include "napi/kv-schema.h"

namespace folio::napi {

namespace {

std::vector<float> floats(Napi::Env env, const Napi::Value& v, const char* what) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array)
    throw js_error(env, "INVALID_ARGUMENT", std::string(what) + " must be a Float32Array");
  Napi::Float32Array a = v.As<Napi::Float32Array>();
  return std::vector<float>(a.Data(), a.Data() + a.ElementLength());
}

std::vector<std::vector<float>> rows(Napi::Env env, const Napi::Value& v, const char* what) {
  if (!v.IsArray()) throw js_error(env, "INVALID_ARGUMENT", std::string(what) + " must be an array of Float32Arrays");
  Napi::Array a = v.As<Napi::Array>();
  std::vector<std::vector<float>> out;
  for (uint32_t i = 0; i < a.Length(); i++) out.push_back(floats(env, a.Get(i), what));
  for (auto& r : out)
    if (r.size() != out[0].size())
      throw js_error(env, "INVALID_ARGUMENT", std::string(what) + " rows differ in length");
  return out;
}

template <typename T>
Napi::Array int_array(Napi::Env env, const std::vector<T>& v) {
  Napi::Array a = Napi::Array::New(env, v.size());
  for (size_t i = 0; i < v.size(); i++) a.Set(uint32_t(i), double(v[i]));
  return a;
}

Napi::Array float_rows(Napi::Env env, const std::vector<std::vector<float>>& v) {
  Napi::Array a = Napi::Array::New(env, v.size());
  for (size_t i = 0; i < v.size(); i++) a.Set(uint32_t(i), copy_floats(env, v[i].data(), v[i].size()));
  return a;
}

int32_t int_arg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info.Length() <= i || !info[i].IsNumber())
    throw js_error(info.Env(), "INVALID_ARGUMENT", std::string(what) + " must be a number");
  return info[i].As<Napi::Number>().Int32Value();
}

// windowScores(qw [w·H·D], keys [Hk][L·D], { nHead, nHeadKv, headDim, L, w, kernel }) -> { attn, score }
Napi::Value WindowScores(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<float> qw = floats(env, info[0], "qw");
  const std::vector<std::vector<float>> keys = rows(env, info[1], "keys");
  Napi::Object o = opts_arg(info, 2);
  kv::WindowShape s;
  s.n_head = int(num_opt(env, o, "nHead", 1, 1, 4096));
  s.n_head_kv = int(num_opt(env, o, "nHeadKv", 1, 1, 4096));
  s.head_dim = s.head_dim_v = int(num_opt(env, o, "headDim", 1, 1, 4096));
  s.L = int32_t(num_opt(env, o, "L", 1, 1, 1 << 24));
  s.w = int32_t(num_opt(env, o, "w", 1, 1, 1 << 24));
  const int kernel = int(num_opt(env, o, "kernel", 7, 1, 1 << 10));
  if (s.n_head % s.n_head_kv || s.w > s.L || keys.size() != size_t(s.n_head_kv) ||
      keys[0].size() != size_t(s.L) * size_t(s.head_dim) ||
      qw.size() != size_t(s.w) * size_t(s.n_head) * size_t(s.head_dim))
    throw js_error(env, "INVALID_ARGUMENT", "windowScores: shapes do not match");
  ThreadPool pool(1);
  kv::WindowScores ws = kv::snapkv_scores(
      pool, s, qw.data(), [&](int g, float* out) { std::copy(keys[size_t(g)].begin(), keys[size_t(g)].end(), out); },
      kernel);
  Napi::Object r = Napi::Object::New(env);
  r.Set("attn", float_rows(env, ws.attn));
  r.Set("score", float_rows(env, ws.score));
  return r;
}

Napi::Value MaxPool(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<float> x = kv::max_pool(floats(env, info[0], "x"), int_arg(info, 1, "kernel"));
  return copy_floats(env, x.data(), x.size());
}

Napi::Value AdaCaps(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const auto scores = rows(env, info[0], "scores");
  const int32_t b = int_arg(info, 1, "b");
  if (info.Length() < 3 || !info[2].IsNumber()) throw js_error(env, "INVALID_ARGUMENT", "alpha must be a number");
  if (scores.empty() || b < 0 || size_t(b) > scores[0].size())
    throw js_error(env, "INVALID_ARGUMENT", "b must be within the selectable tokens");
  return int_array(env, kv::ada_caps(scores, b, info[2].As<Napi::Number>().DoubleValue()));
}

Napi::Value TopTokens(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return int_array(env, kv::top_tokens(floats(env, info[0], "scores"), int_arg(info, 1, "cap")));
}

Napi::Value PyramidSchedule(const Napi::CallbackInfo& info) {
  return int_array(info.Env(), kv::pyramid_schedule(int_arg(info, 0, "b"), int_arg(info, 1, "selectable"),
                                                    int_arg(info, 2, "layers"), int_arg(info, 3, "beta")));
}

// resolveBudget({ method, budget, window, ... }, L) -> { compress, reason, B, b, clamped }: the options read
// as compress() reads them, the budget as the compression resolves it.
Napi::Value ResolveBudget(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const kv::CompressOptions c = compress_options(env, opts_arg(info, 0), "snapkv");
  const kv::Budget b = kv::resolve_budget(c, int_arg(info, 1, "L"));
  Napi::Object r = Napi::Object::New(env);
  r.Set("compress", b.compress);
  r.Set("reason", b.reason);
  r.Set("B", b.B);
  r.Set("b", b.b);
  r.Set("clamped", b.clamped);
  return r;
}

// defaultChunk(B, nCtx) -> the chunk size a chunked read takes for a budget of B tokens per head.
Napi::Value DefaultChunk(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), kv::default_chunk(int_arg(info, 0, "B"), int_arg(info, 1, "nCtx")));
}

}  // namespace

void init_kv_ops(Napi::Env env, Napi::Object exports) {
  Napi::Object kv = Napi::Object::New(env);
  kv.Set("windowScores", Napi::Function::New(env, WindowScores, "windowScores"));
  kv.Set("maxPool", Napi::Function::New(env, MaxPool, "maxPool"));
  kv.Set("adaCaps", Napi::Function::New(env, AdaCaps, "adaCaps"));
  kv.Set("topTokens", Napi::Function::New(env, TopTokens, "topTokens"));
  kv.Set("pyramidSchedule", Napi::Function::New(env, PyramidSchedule, "pyramidSchedule"));
  kv.Set("resolveBudget", Napi::Function::New(env, ResolveBudget, "resolveBudget"));
  kv.Set("defaultChunk", Napi::Function::New(env, DefaultChunk, "defaultChunk"));
  exports.Set("kv", kv);
}

}  // namespace folio::napi
