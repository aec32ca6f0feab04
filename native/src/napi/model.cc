// Binding of models and sessions: loadModel(path) -> Model; model.createSession() -> Session with
// prefill / generate as async work off the JS thread, progress and token streams, cancellation.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "model/context.h"
#include "model/model.h"
#include "napi/common.h"
#include "quant/quant.h"
#include "sampling/sampler.h"
#include "tokenizer/vocab.h"

namespace folio::napi {

namespace {

struct Constructors {
  Napi::FunctionReference model;
  Napi::FunctionReference session;
};

Constructors& ctors(Napi::Env env) { return *env.GetInstanceData<Constructors>(); }

// Runs fn on a worker thread; a thrown error is kept as (code, message) for the promise's rejection.
template <typename F>
bool capture_errors(F&& fn, std::string& code, std::string& message) {
  try {
    fn();
    return true;
  } catch (const folio::Error& e) {
    code = e.code();
    message = e.what();
  } catch (const std::bad_alloc&) {
    code = "OUT_OF_MEMORY";
    message = "out of memory";
  } catch (const std::exception& e) {
    code = "INTERNAL";
    message = e.what();
  }
  return false;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<int32_t> token_array(Napi::Env env, const Napi::Value& v, const char* what) {
  std::vector<int32_t> out;
  if (v.IsTypedArray()) {
    Napi::TypedArray ta = v.As<Napi::TypedArray>();
    if (ta.TypedArrayType() != napi_int32_array)
      throw js_error(env, "INVALID_ARGUMENT", std::string(what) + " must be an Int32Array or an array of numbers");
    Napi::Int32Array a = v.As<Napi::Int32Array>();
    out.assign(a.Data(), a.Data() + a.ElementLength());
  } else if (v.IsArray()) {
    Napi::Array a = v.As<Napi::Array>();
    out.reserve(a.Length());
    for (uint32_t i = 0; i < a.Length(); i++) {
      Napi::Value e = a.Get(i);
      if (!e.IsNumber()) throw js_error(env, "INVALID_ARGUMENT", std::string(what) + " must contain only numbers");
      double d = e.As<Napi::Number>().DoubleValue();
      if (d != double(int32_t(d))) throw js_error(env, "INVALID_ARGUMENT", std::string(what) + " must contain integers");
      out.push_back(int32_t(d));
    }
  } else {
    throw js_error(env, "INVALID_ARGUMENT", std::string(what) + " must be an Int32Array or an array of numbers");
  }
  return out;
}

// Optional numeric option from an options object, range-checked.
double num_opt(Napi::Env env, const Napi::Object& o, const char* key, double def, double lo, double hi) {
  if (!o.Has(key) || o.Get(key).IsUndefined()) return def;
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) throw js_error(env, "INVALID_ARGUMENT", std::string("option '") + key + "' must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= lo && d <= hi))
    throw js_error(env, "INVALID_ARGUMENT", strfmt("option '%s' = %g is out of range [%g, %g]", key, d, lo, hi));
  return d;
}

bool bool_opt(const Napi::Object& o, const char* key, bool def) {
  return o.Has(key) && o.Get(key).IsBoolean() ? o.Get(key).As<Napi::Boolean>().Value() : def;
}

Napi::Object opts_arg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() > i && info[i].IsObject()) return info[i].As<Napi::Object>();
  if (info.Length() > i && !info[i].IsUndefined())
    throw js_error(info.Env(), "INVALID_ARGUMENT", "options must be an object");
  return Napi::Object::New(info.Env());
}

// ---------------------------------------------------------------------------------------------------------
// Model

class ModelWrap : public Napi::ObjectWrap<ModelWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Model",
                       {InstanceMethod("info", &ModelWrap::Info), InstanceMethod("tokenize", &ModelWrap::Tokenize),
                        InstanceMethod("tokenToPiece", &ModelWrap::TokenToPiece),
                        InstanceMethod("detokenize", &ModelWrap::Detokenize),
                        InstanceMethod("createSession", &ModelWrap::CreateSession),
                        InstanceMethod("dispose", &ModelWrap::Dispose)});
  }

  explicit ModelWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ModelWrap>(info) {
    if (info.Length() != 1 || !info[0].IsExternal())
      throw js_error(info.Env(), "INVALID_ARGUMENT", "use loadModel(path) to load a model");
    model_ = *info[0].As<Napi::External<std::shared_ptr<Model>>>().Data();
  }

  std::shared_ptr<Model> model(Napi::Env env) const {
    if (!model_) throw js_error(env, "DISPOSED", "the model has been unloaded");
    return model_;
  }

 private:
  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto m = model(env);
    const HParams& hp = m->hparams();
    const Vocab& v = m->vocab();
    Napi::Object o = Napi::Object::New(env);
    o.Set("path", m->file().path());
    o.Set("fileBytes", double(m->file().file_size()));
    o.Set("ggufVersion", m->file().version());
    o.Set("architecture", hp.arch_name);
    o.Set("name", hp.name);
    o.Set("nParams", double(m->n_params()));
    o.Set("weightBytes", double(m->weights().total_bytes));
    o.Set("nVocab", hp.n_vocab);
    o.Set("contextLength", hp.n_ctx_train);
    o.Set("nEmbd", hp.n_embd);
    o.Set("nLayer", hp.n_layer);
    o.Set("nHead", hp.n_head);
    o.Set("nHeadKv", hp.n_head_kv);
    o.Set("headDim", hp.head_dim);
    o.Set("headDimV", hp.head_dim_v);
    o.Set("nFf", hp.n_ff);
    o.Set("ropeBase", hp.rope_base);
    o.Set("ropeDim", hp.rope_dim);
    o.Set("ropeScaling", m->weights().rope_freqs ? "llama3" : hp.rope_freq_scale != 1.0f ? "linear" : "none");
    o.Set("rmsEps", hp.rms_eps);
    Napi::Object types = Napi::Object::New(env);
    for (auto& [t, n] : m->weights().type_counts) types.Set(type_name(t), n);
    o.Set("tensorTypes", types);
    o.Set("fileType", double(m->file().get_int_or("general.file_type", -1)));
    Napi::Object tok = Napi::Object::New(env);
    tok.Set("model", v.model());
    tok.Set("pre", v.pre());
    tok.Set("nTokens", v.n_tokens());
    tok.Set("bos", v.bos());
    tok.Set("eos", v.eos());
    tok.Set("addBos", v.add_bos());
    tok.Set("addEos", v.add_eos());
    o.Set("tokenizer", tok);
    o.Set("chatTemplate", m->file().get_string_or("tokenizer.chat_template", ""));
    o.Set("isa", quant::isa_name(quant::best_isa()));
    return o;
  }

  Napi::Value Tokenize(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) throw js_error(env, "INVALID_ARGUMENT", "tokenize(text) needs a string");
    Napi::Object o = opts_arg(info, 1);
    auto m = model(env);
    std::vector<int32_t> ids = guard(env, [&] {
      return m->vocab().tokenize(info[0].As<Napi::String>().Utf8Value(), bool_opt(o, "addSpecial", true),
                                 bool_opt(o, "parseSpecial", false));
    });
    Napi::Int32Array a = Napi::Int32Array::New(env, ids.size());
    std::copy(ids.begin(), ids.end(), a.Data());
    return a;
  }

  Napi::Value TokenToPiece(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto m = model(env);
    if (info.Length() < 1 || !info[0].IsNumber()) throw js_error(env, "INVALID_ARGUMENT", "tokenToPiece(id) needs a number");
    int32_t id = info[0].As<Napi::Number>().Int32Value();
    if (id < 0 || id >= m->vocab().n_tokens()) throw js_error(env, "INVALID_TOKEN", strfmt("token id %d is outside the vocabulary", id));
    bool special = info.Length() > 1 && info[1].IsBoolean() && info[1].As<Napi::Boolean>().Value();
    std::string piece = guard(env, [&] { return m->vocab().token_to_piece(id, special); });
    return copy_bytes(env, piece.data(), piece.size());
  }

  Napi::Value Detokenize(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto m = model(env);
    std::vector<int32_t> ids = token_array(env, info.Length() ? info[0] : env.Undefined(), "ids");
    Napi::Object o = opts_arg(info, 1);
    return Napi::String::New(env, guard(env, [&] { return m->vocab().detokenize(ids, bool_opt(o, "special", false)); }));
  }

  Napi::Value CreateSession(const Napi::CallbackInfo& info);

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    model_.reset();  // sessions keep their own reference; the file is unmapped when the last one goes
    return info.Env().Undefined();
  }

  std::shared_ptr<Model> model_;
};

// ---------------------------------------------------------------------------------------------------------
// Session: a context (KV cache) over a model, one operation at a time.

struct SessionState {
  std::shared_ptr<Model> model;
  std::unique_ptr<Context> ctx;
  std::vector<int32_t> tokens;     // what the cache holds, in order
  std::vector<float> last_logits;  // logits after the last token, for the next sample
  std::atomic<bool> busy{false};
  std::atomic<bool> cancel{false};
};

// Marks the session busy for the lifetime of an async operation.
struct BusyLease {
  std::shared_ptr<SessionState> s;
  explicit BusyLease(std::shared_ptr<SessionState> st) : s(std::move(st)) {}
  ~BusyLease() { s->busy = false; }
};

struct Progress {
  int64_t done, total;
};

class PrefillWorker : public Napi::AsyncProgressQueueWorker<Progress> {
 public:
  PrefillWorker(Napi::Env env, std::shared_ptr<SessionState> s, std::vector<int32_t> tokens, bool all_logits,
                Napi::Function on_progress)
      : Napi::AsyncProgressQueueWorker<Progress>(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        lease_(std::move(s)),
        tokens_(std::move(tokens)),
        all_logits_(all_logits) {
    if (!on_progress.IsEmpty()) on_progress_ = Napi::Persistent(on_progress);
  }
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute(const ExecutionProgress& progress) override {
    SessionState& s = *lease_.s;
    std::string message;
    if (!capture_errors([&] {
      auto t0 = std::chrono::steady_clock::now();
      s.ctx->eval(tokens_, all_logits_, logits_, [&](int64_t d, int64_t t) { progress.Send(new Progress{d, t}, 1); },
                  &s.cancel);
      seconds_ = seconds_since(t0);
      s.tokens.insert(s.tokens.end(), tokens_.begin(), tokens_.end());
      const size_t nv = size_t(s.model->hparams().n_vocab);
      s.last_logits.assign(logits_.end() - std::ptrdiff_t(nv), logits_.end());
    }, code_, message))
      SetError(message);
  }

  void OnProgress(const Progress* p, size_t count) override {
    if (on_progress_.IsEmpty()) return;
    Napi::Env env = Env();
    for (size_t i = 0; i < count; i++)
      on_progress_.Call({Napi::Number::New(env, double(p[i].done)), Napi::Number::New(env, double(p[i].total))});
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object r = Napi::Object::New(env);
    r.Set("logits", copy_floats(env, logits_.data(), logits_.size()));
    r.Set("nPast", lease_.s->ctx->n_past());
    r.Set("seconds", seconds_);
    r.Set("tokensPerSecond", seconds_ > 0 ? double(tokens_.size()) / seconds_ : 0.0);
    deferred_.Resolve(r);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(js_error(Env(), code_, e.Message()).Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  BusyLease lease_;
  std::vector<int32_t> tokens_;
  bool all_logits_;
  Napi::FunctionReference on_progress_;
  std::vector<float> logits_;
  double seconds_ = 0;
  std::string code_ = "INTERNAL";
};

struct TokenEvent {
  int32_t id;
  std::string text;  // complete UTF-8 text this token finished (may be empty)
};

class GenerateWorker : public Napi::AsyncProgressQueueWorker<TokenEvent> {
 public:
  GenerateWorker(Napi::Env env, std::shared_ptr<SessionState> s, int32_t n, const SamplingParams& sp, bool stop_eog,
                 Napi::Function on_token)
      : Napi::AsyncProgressQueueWorker<TokenEvent>(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        lease_(std::move(s)),
        n_(n),
        sp_(sp),
        stop_eog_(stop_eog) {
    if (!on_token.IsEmpty()) on_token_ = Napi::Persistent(on_token);
  }
  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute(const ExecutionProgress& progress) override {
    SessionState& s = *lease_.s;
    std::string message;
    if (!capture_errors([&] {
      const Vocab& vocab = s.model->vocab();
      Sampler sampler(sp_, s.model->hparams().n_vocab);
      Utf8Stream utf8;
      std::vector<float> logits;
      auto t0 = std::chrono::steady_clock::now();
      stop_ = "length";
      for (int32_t i = 0; i < n_; i++) {
        if (s.cancel) { stop_ = "cancelled"; break; }
        const int32_t id = sampler.sample(s.last_logits.data(), s.tokens);
        ids_.push_back(id);
        std::string piece = utf8.push(id < vocab.n_tokens() ? vocab.token_to_piece(id, false) : std::string());
        text_ += piece;
        progress.Send(new TokenEvent{id, piece}, 1);
        if (stop_eog_ && id < vocab.n_tokens() && vocab.is_eog(id)) { stop_ = "eog"; break; }
        if (s.ctx->n_past() >= s.ctx->n_ctx()) { stop_ = "context"; break; }
        // Feed the token back so the cache holds the whole answer for the next turn.
        try {
          s.ctx->eval({id}, false, logits, nullptr, &s.cancel);
        } catch (const folio::Error& e) {
          if (e.code() != "CANCELLED") throw;
          stop_ = "cancelled";
          break;
        }
        s.tokens.push_back(id);
        s.last_logits.swap(logits);
      }
      std::string tail = utf8.flush();
      text_ += tail;
      seconds_ = seconds_since(t0);
    }, code_, message))
      SetError(message);
  }

  void OnProgress(const TokenEvent* ev, size_t count) override {
    if (on_token_.IsEmpty()) return;
    Napi::Env env = Env();
    for (size_t i = 0; i < count; i++) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("id", ev[i].id);
      o.Set("text", ev[i].text);
      Napi::Value r = on_token_.Call({o});
      if (r.IsBoolean() && !r.As<Napi::Boolean>().Value()) lease_.s->cancel = true;  // the callback asked to stop
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object r = Napi::Object::New(env);
    Napi::Array ids = Napi::Array::New(env, ids_.size());
    for (size_t i = 0; i < ids_.size(); i++) ids.Set(uint32_t(i), ids_[i]);
    r.Set("tokens", ids);
    r.Set("text", text_);
    r.Set("stopReason", stop_);
    r.Set("seconds", seconds_);
    r.Set("tokensPerSecond", seconds_ > 0 ? double(ids_.size()) / seconds_ : 0.0);
    r.Set("nPast", lease_.s->ctx->n_past());
    deferred_.Resolve(r);
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(js_error(Env(), code_, e.Message()).Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  BusyLease lease_;
  int32_t n_;
  SamplingParams sp_;
  bool stop_eog_;
  Napi::FunctionReference on_token_;
  std::vector<int32_t> ids_;
  std::string text_;
  std::string stop_;
  double seconds_ = 0;
  std::string code_ = "INTERNAL";
};

class SessionWrap : public Napi::ObjectWrap<SessionWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Session",
                       {InstanceMethod("prefill", &SessionWrap::Prefill),
                        InstanceMethod("generate", &SessionWrap::Generate),
                        InstanceMethod("cancel", &SessionWrap::Cancel),
                        InstanceMethod("truncate", &SessionWrap::Truncate),
                        InstanceMethod("tokens", &SessionWrap::Tokens),
                        InstanceMethod("lastLogits", &SessionWrap::LastLogits),
                        InstanceMethod("dispose", &SessionWrap::Dispose),
                        InstanceAccessor("nPast", &SessionWrap::NPast, nullptr),
                        InstanceAccessor("nCtx", &SessionWrap::NCtx, nullptr),
                        InstanceAccessor("nThreads", &SessionWrap::NThreads, nullptr),
                        InstanceAccessor("busy", &SessionWrap::Busy, nullptr)});
  }

  explicit SessionWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SessionWrap>(info) {
    if (info.Length() != 1 || !info[0].IsExternal())
      throw js_error(info.Env(), "INVALID_ARGUMENT", "use model.createSession() to create a session");
    state_ = *info[0].As<Napi::External<std::shared_ptr<SessionState>>>().Data();
  }

 private:
  std::shared_ptr<SessionState> acquire(Napi::Env env) {
    if (!state_) throw js_error(env, "DISPOSED", "the session has been disposed");
    bool expected = false;
    if (!state_->busy.compare_exchange_strong(expected, true))
      throw js_error(env, "BUSY", "the session is already running a prefill or a generation");
    state_->cancel = false;
    return state_;
  }

  Napi::Value Prefill(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::vector<int32_t> tokens = token_array(env, info.Length() ? info[0] : env.Undefined(), "tokens");
    Napi::Object o = opts_arg(info, 1);
    Napi::Function cb = o.Has("onProgress") && o.Get("onProgress").IsFunction() ? o.Get("onProgress").As<Napi::Function>()
                                                                                 : Napi::Function();
    auto s = acquire(env);
    auto* w = new PrefillWorker(env, s, std::move(tokens), bool_opt(o, "allLogits", false), cb);
    Napi::Promise p = w->promise();
    w->Queue();
    return p;
  }

  Napi::Value Generate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object o = opts_arg(info, 0);
    if (!state_) throw js_error(env, "DISPOSED", "the session has been disposed");
    if (state_->last_logits.empty())
      throw js_error(env, "NO_PROMPT", "generate() needs a prefill first: there are no logits to sample from");
    const int32_t n = int32_t(num_opt(env, o, "n", 128, 0, 1 << 24));
    SamplingParams sp;
    sp.temperature = float(num_opt(env, o, "temperature", sp.temperature, 0, 100));
    sp.top_k = int32_t(num_opt(env, o, "topK", sp.top_k, 0, 1 << 30));
    sp.top_p = float(num_opt(env, o, "topP", sp.top_p, 1e-9, 1));
    sp.min_p = float(num_opt(env, o, "minP", sp.min_p, 0, 1));
    sp.repeat_penalty = float(num_opt(env, o, "repeatPenalty", sp.repeat_penalty, 1e-3, 100));
    sp.repeat_last_n = int32_t(num_opt(env, o, "repeatLastN", sp.repeat_last_n, -1, 1 << 30));
    sp.seed = uint64_t(num_opt(env, o, "seed", 0, 0, 9007199254740991.0));
    Napi::Function cb = o.Has("onToken") && o.Get("onToken").IsFunction() ? o.Get("onToken").As<Napi::Function>()
                                                                           : Napi::Function();
    auto s = acquire(env);
    GenerateWorker* w;
    try {
      w = guard(env, [&] { return new GenerateWorker(env, s, n, sp, bool_opt(o, "stopAtEog", false), cb); });
    } catch (...) {
      s->busy = false;
      throw;
    }
    Napi::Promise p = w->promise();
    w->Queue();
    return p;
  }

  Napi::Value Cancel(const Napi::CallbackInfo& info) {
    if (state_) state_->cancel = true;
    return info.Env().Undefined();
  }

  Napi::Value Truncate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsNumber()) throw js_error(env, "INVALID_ARGUMENT", "truncate(n) needs a number");
    auto s = acquire(env);
    BusyLease lease(s);
    const int32_t n = info[0].As<Napi::Number>().Int32Value();
    guard(env, [&] { s->ctx->truncate(n); });
    s->tokens.resize(size_t(n));
    s->last_logits.clear();  // the logits after position n-1 are gone; prefill again to sample
    return env.Undefined();
  }

  Napi::Value Tokens(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!state_) throw js_error(env, "DISPOSED", "the session has been disposed");
    if (state_->busy) throw js_error(env, "BUSY", "the session is running a prefill or a generation");
    Napi::Int32Array a = Napi::Int32Array::New(env, state_->tokens.size());
    std::copy(state_->tokens.begin(), state_->tokens.end(), a.Data());
    return a;
  }

  Napi::Value LastLogits(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (!state_) throw js_error(env, "DISPOSED", "the session has been disposed");
    if (state_->busy) throw js_error(env, "BUSY", "the session is running a prefill or a generation");
    return copy_floats(env, state_->last_logits.data(), state_->last_logits.size());
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (state_ && state_->busy) throw js_error(info.Env(), "BUSY", "cancel the running operation before disposing");
    state_.reset();  // a running worker holds its own reference
    return info.Env().Undefined();
  }

  Napi::Value NPast(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), state_ ? state_->ctx->n_past() : 0); }
  Napi::Value NCtx(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), state_ ? state_->ctx->n_ctx() : 0); }
  Napi::Value NThreads(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), state_ ? state_->ctx->n_threads() : 0); }
  Napi::Value Busy(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), state_ && state_->busy); }

  std::shared_ptr<SessionState> state_;
};

Napi::Value ModelWrap::CreateSession(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto m = model(env);
  Napi::Object o = opts_arg(info, 0);
  ContextParams cp;
  cp.n_ctx = int32_t(num_opt(env, o, "nCtx", 0, 0, 1 << 30));
  cp.n_batch = int32_t(num_opt(env, o, "nBatch", 512, 1, 1 << 20));
  cp.n_threads = int(num_opt(env, o, "nThreads", 0, 0, 1024));
  auto s = std::make_shared<SessionState>();
  s->model = m;
  s->ctx = guard(env, [&] { return std::make_unique<Context>(*m, cp); });
  auto ext = Napi::External<std::shared_ptr<SessionState>>::New(env, new std::shared_ptr<SessionState>(s),
                                                                [](Napi::Env, std::shared_ptr<SessionState>* p) { delete p; });
  return ctors(env).session.New({ext});
}

class LoadWorker : public Napi::AsyncWorker {
 public:
  LoadWorker(Napi::Env env, std::string path)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), path_(std::move(path)) {}
  Napi::Promise promise() { return deferred_.Promise(); }
  void Execute() override {
    std::string message;
    if (!capture_errors([&] { model_ = Model::load(path_); }, code_, message)) SetError(message);
  }
  void OnOK() override {
    Napi::Env env = Env();
    auto ext = Napi::External<std::shared_ptr<Model>>::New(env, new std::shared_ptr<Model>(std::move(model_)),
                                                           [](Napi::Env, std::shared_ptr<Model>* p) { delete p; });
    deferred_.Resolve(ctors(env).model.New({ext}));
  }
  void OnError(const Napi::Error& e) override { deferred_.Reject(js_error(Env(), code_, e.Message()).Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::string path_;
  std::shared_ptr<Model> model_;
  std::string code_ = "INTERNAL";
};

Napi::Value LoadModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw js_error(env, "INVALID_ARGUMENT", "loadModel(path) needs a path");
  auto* w = new LoadWorker(env, info[0].As<Napi::String>().Utf8Value());
  Napi::Promise p = w->promise();
  w->Queue();
  return p;
}

}  // namespace

void init_model(Napi::Env env, Napi::Object exports) {
  auto* c = new Constructors();
  c->model = Napi::Persistent(ModelWrap::Define(env));
  c->session = Napi::Persistent(SessionWrap::Define(env));
  env.SetInstanceData<Constructors>(c);
  exports.Set("loadModel", Napi::Function::New(env, LoadModel, "loadModel"));
}

}  // namespace folio::napi
