// Entry point of folio.node.
#include <cstring>

#include "napi/common.h"

namespace folio::napi {

Napi::Error js_error(Napi::Env env, const std::string& code, const std::string& message) {
  Napi::Error err = Napi::Error::New(env, message);
  err.Set("code", Napi::String::New(env, code));
  return err;
}

Napi::Uint8Array copy_bytes(Napi::Env env, const void* data, size_t n) {
  Napi::Uint8Array a = Napi::Uint8Array::New(env, n);
  if (n) std::memcpy(a.Data(), data, n);
  return a;
}

Napi::Float32Array copy_floats(Napi::Env env, const float* data, size_t n) {
  Napi::Float32Array a = Napi::Float32Array::New(env, n);
  if (n) std::memcpy(a.Data(), data, n * sizeof(float));
  return a;
}

Registry& registry(Napi::Env env) { return *env.GetInstanceData<Registry>(); }

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData<Registry>(new Registry());
  exports.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
  init_gguf(env, exports);
  init_ops(env, exports);
  init_vocab(env, exports);
  init_model(env, exports);
  init_kv_ops(env, exports);
  return exports;
}

}  // namespace folio::napi

static Napi::Object InitFolio(Napi::Env env, Napi::Object exports) { return folio::napi::Init(env, exports); }
NODE_API_MODULE(folio, InitFolio)
