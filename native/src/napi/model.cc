// Binding of models: loadModel(path) -> Model with info, tokenizer access and sessions.
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "backend/gpu-loader.h"
#include "napi/common.h"
#include "napi/job.h"
#include "napi/session.h"
#include "quant/quant.h"
#include "tokenizer/vocab.h"

namespace folio::napi {

namespace {

class ModelWrap : public Napi::ObjectWrap<ModelWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Model",
                       {InstanceMethod("info", &ModelWrap::Info), InstanceMethod("tokenize", &ModelWrap::Tokenize),
                        InstanceMethod("tokenToPiece", &ModelWrap::TokenToPiece),
                        InstanceMethod("detokenize", &ModelWrap::Detokenize),
                        InstanceMethod("createSession", &ModelWrap::CreateSession),
                        InstanceMethod("loadSession", &ModelWrap::LoadSession),
                        InstanceMethod("dispose", &ModelWrap::Dispose)});
  }

  explicit ModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ModelWrap>(info) {
    if (info.Length() != 1 || !info[0].IsExternal())
      throw js_error(info.Env(), "INVALID_ARGUMENT", "use loadModel(path) to load a model");
    model_ = *info[0].As<Napi::External<std::shared_ptr<Model>>>().Data();
  }

 private:
  std::shared_ptr<Model> model(Napi::Env env) const {
    if (!model_) throw js_error(env, "DISPOSED", "the model has been unloaded");
    return model_;
  }

  // Every entry point runs the engine inside guard(): a C++ exception that escaped to node-addon-api would
  // terminate the process (the engine host, and every model with it).
  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto m = model(env);
    return guard(env, [&] { return info_object(env, *m); });
  }

  static Napi::Object info_object(Napi::Env env, const Model& m) {
    const HParams& hp = m.hparams();
    const Vocab& v = m.vocab();
    Napi::Object o = Napi::Object::New(env);
    o.Set("path", m.file().path());
    o.Set("fileBytes", double(m.file().file_size()));
    o.Set("ggufVersion", m.file().version());
    o.Set("architecture", hp.arch_name);
    o.Set("name", hp.name);
    o.Set("nParams", double(m.n_params()));
    o.Set("weightBytes", double(m.weights().total_bytes));
    o.Set("nVocab", hp.n_vocab);
    o.Set("contextLength", hp.n_ctx_train);  // sliding-window models too: their attention slides past it
    int32_t sliding = 0, window = 0;
    for (int l = 0; l < hp.n_layer; l++)
      if (hp.layer_window(l) > 0) sliding++, window = hp.layer_window(l);
    o.Set("slidingLayers", sliding);
    o.Set("slidingWindow", window);
    o.Set("nEmbd", hp.n_embd);
    o.Set("nLayer", hp.n_layer);
    o.Set("nHead", hp.n_head);
    o.Set("nHeadKv", hp.n_head_kv);
    o.Set("headDim", hp.head_dim);
    o.Set("headDimV", hp.head_dim_v);
    o.Set("nFf", hp.n_ff);
    o.Set("ropeBase", hp.rope_base);
    o.Set("ropeDim", hp.rope_dim);
    o.Set("ropeScaling", m.weights().rope_freqs       ? "llama3"
                         : m.weights().rope_long      ? "longrope"
                         : hp.rope_freq_scale != 1.0f ? "linear"
                                                      : "none");
    o.Set("rmsEps", hp.rms_eps);
    Napi::Object types = Napi::Object::New(env);
    for (auto& [t, n] : m.weights().type_counts) types.Set(type_name(t), n);
    o.Set("tensorTypes", types);
    o.Set("fileType", double(m.file().get_int_or("general.file_type", -1)));
    Napi::Object tok = Napi::Object::New(env);
    tok.Set("model", v.model());
    tok.Set("pre", v.pre());
    tok.Set("nTokens", v.n_tokens());
    tok.Set("bos", v.bos());
    tok.Set("eos", v.eos());
    tok.Set("addBos", v.add_bos());
    tok.Set("addEos", v.add_eos());
    Napi::Array eog = Napi::Array::New(env, v.eog_ids().size());
    for (size_t i = 0; i < v.eog_ids().size(); i++) eog.Set(uint32_t(i), v.eog_ids()[i]);
    tok.Set("eog", eog);
    o.Set("tokenizer", tok);
    o.Set("chatTemplate", m.file().get_string_or("tokenizer.chat_template", ""));
    o.Set("isa", quant::isa_name(quant::best_isa()));
    o.Set("backend", gpu::status().backend);
    o.Set("backendReason", gpu::status().reason);
    return o;
  }

  Napi::Value Tokenize(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString())
      throw js_error(env, "INVALID_ARGUMENT", "tokenize(text) needs a string");
    Napi::Object o = opts_arg(info, 1);
    auto m = model(env);
    const bool add = bool_opt(env, o, "addSpecial", true), parse = bool_opt(env, o, "parseSpecial", false);
    std::vector<int32_t> ids =
        guard(env, [&] { return m->vocab().tokenize(info[0].As<Napi::String>().Utf8Value(), add, parse); });
    Napi::Int32Array a = Napi::Int32Array::New(env, ids.size());
    std::copy(ids.begin(), ids.end(), a.Data());
    return a;
  }

  Napi::Value TokenToPiece(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto m = model(env);
    if (info.Length() < 1 || !info[0].IsNumber())
      throw js_error(env, "INVALID_ARGUMENT", "tokenToPiece(id) needs a number");
    const bool special = info.Length() > 1 && info[1].IsBoolean() && info[1].As<Napi::Boolean>().Value();
    std::string piece =
        guard(env, [&] { return m->vocab().token_to_piece(info[0].As<Napi::Number>().Int32Value(), special); });
    return copy_bytes(env, piece.data(), piece.size());
  }

  Napi::Value Detokenize(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto m = model(env);
    std::vector<int32_t> ids = token_array(env, info.Length() ? info[0] : env.Undefined(), "ids");
    const bool special = bool_opt(env, opts_arg(info, 1), "special", false);
    return Napi::String::New(env, guard(env, [&] { return m->vocab().detokenize(ids, special); }));
  }

  Napi::Value CreateSession(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto m = model(env);
    const ContextParams cp = context_params(env, opts_arg(info, 0));
    auto s = guard(env, [&] { return std::make_unique<Session>(m, cp); });
    return wrap_session(env, std::move(s));
  }

  // model.loadSession(path, opts) -> Promise<{ session, meta }>
  Napi::Value LoadSession(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto m = model(env);
    if (info.Length() < 1 || !info[0].IsString())
      throw js_error(env, "INVALID_ARGUMENT", "loadSession(path) needs a path");
    const std::string path = info[0].As<Napi::String>().Utf8Value();
    const ContextParams cp = context_params(env, opts_arg(info, 1));
    auto loaded = std::make_shared<std::unique_ptr<Session>>();
    auto meta = std::make_shared<std::string>();
    return Job::start(
        env, [=](const Job::Emit&) { *loaded = Session::load(m, path, cp, meta.get()); },
        [=](Napi::Env env) {
          Napi::Object r = Napi::Object::New(env);
          r.Set("session", wrap_session(env, std::move(*loaded)));
          r.Set("meta", *meta);
          return r;
        });
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    model_.reset();  // sessions keep their own reference; the file is unmapped when the last one goes
    return info.Env().Undefined();
  }

  std::shared_ptr<Model> model_;
};

Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw js_error(env, "INVALID_ARGUMENT", "loadModel(path) needs a path");
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  auto loaded = std::make_shared<std::shared_ptr<Model>>();
  return Job::start(
      env, [=](const Job::Emit&) { *loaded = Model::load(path); },
      [=](Napi::Env env) {
        auto ext = Napi::External<std::shared_ptr<Model>>::New(env, new std::shared_ptr<Model>(std::move(*loaded)),
                                                               [](Napi::Env, std::shared_ptr<Model>* p) { delete p; });
        return registry(env).model.New({ext});
      });
}

}  // namespace

// What model files the engine can open: its architectures (general.architecture) and the tensor types it has
// kernels for (ggml names; Folio's own repacked layouts are not file types). electron/models/gguf-tables.ts
// holds the same lists for reading headers without the engine; test/capabilities.test.ts keeps them equal.
static Napi::Value Capabilities(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array archs = Napi::Array::New(env);
  for (Arch a : kArchitectures) archs.Set(archs.Length(), std::string(arch_name(a)));
  Napi::Array types = Napi::Array::New(env);
  for (uint32_t id = 0; id < 256; id++) {
    const TypeInfo* ti = type_info(id);
    if (ti && quant::weight_type_supported(TensorType(id))) types.Set(types.Length(), std::string(ti->name));
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("architectures", archs);
  o.Set("tensorTypes", types);
  return o;
}

void init_model(Napi::Env env, Napi::Object exports) {
  exports.Set("capabilities", Napi::Function::New(env, Capabilities, "capabilities"));
  registry(env).model = Napi::Persistent(ModelWrap::Define(env));
  init_session(env, exports);
  exports.Set("loadModel", Napi::Function::New(env, LoadModel, "loadModel"));
}

}  // namespace folio::napi
