// Entry point of folio.node.
#include <cstring>

#include "backend/gpu-loader.h"
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

namespace {
Napi::Object gpu_status_object(Napi::Env env, const gpu::Status& st) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("backend", st.backend);
  o.Set("gpuAvailable", st.available);
  o.Set("library", st.library);
  o.Set("reason", st.reason);
  if (st.available) {
    static const char* const types[] = {"discrete", "integrated", "virtual", "cpu"};
    const int32_t t = st.device.device_type;
    Napi::Object d = Napi::Object::New(env);
    d.Set("name", std::string(st.device.name));
    d.Set("runtime", std::string(st.device.runtime));
    d.Set("type", t >= 0 && t < 4 ? types[t] : "cpu");
    d.Set("computeCapability", std::to_string(st.device.compute_major) + "." + std::to_string(st.device.compute_minor));
    d.Set("multiprocessors", st.device.multiprocessors);
    d.Set("totalBytes", double(st.device.total_bytes));
    d.Set("freeBytes", double(st.device.free_bytes));
    d.Set("maxAllocationBytes", double(st.device.max_alloc_bytes));
    o.Set("device", d);
  }
  return o;
}
}  // namespace

// Which compute backend sessions get by default ('auto'), and why (libraries missing, no driver, a device
// auto leaves alone), and each GPU library's own outcome (`gpus`: what backend 'cuda' / 'vulkan' gives).
static Napi::Value BackendInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = gpu_status_object(env, gpu::status());
  Napi::Array gpus = Napi::Array::New(env);
  for (gpu::Kind k : gpu::kKinds) {
    Napi::Object g = gpu_status_object(env, gpu::status(k));
    g.Set("kind", gpu::kind_name(k));
    gpus.Set(gpus.Length(), g);
  }
  o.Set("gpus", gpus);
  return o;
}

void init_process(Napi::Env env, Napi::Object exports);    // process.cc: parent-death signal, exit now
void init_kv_schema(Napi::Env env, Napi::Object exports);  // kv-schema.cc: methods(), statsSchema()
void init_options(Napi::Env env, Napi::Object exports);    // options.cc: optionsSchema()

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData<Registry>(new Registry());
  exports.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
  exports.Set("backendInfo", Napi::Function::New(env, BackendInfo, "backendInfo"));
  init_gguf(env, exports);
  init_ops(env, exports);
  init_vocab(env, exports);
  init_model(env, exports);
  init_kv_ops(env, exports);
  init_kv_schema(env, exports);
  init_options(env, exports);
  init_process(env, exports);
  return exports;
}

}  // namespace folio::napi

static Napi::Object InitFolio(Napi::Env env, Napi::Object exports) { return folio::napi::Init(env, exports); }
NODE_API_MODULE(folio, InitFolio)
