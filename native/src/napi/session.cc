// Binding of sessions: prefill, compress, generate, truncate, fork, save; long operations run off the JS
// thread, one at a time per session, with progress and token streams and cancellation.
#include "napi/session.h"

#include "backend/gpu-loader.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "napi/common.h"
#include "napi/job.h"
#include "napi/kv-schema.h"
#include "napi/options.h"

namespace folio::napi {

namespace {

struct SessionState {
  std::unique_ptr<Session> session;
  std::atomic<bool> busy{false};
  std::atomic<bool> cancel{false};
  // Tokens the JS callback has seen: generation waits for the callback of each token before the next, so
  // a callback returning false stops it right there (bounded, so a stalled JS thread cannot hang it).
  std::mutex ack_mu;
  std::condition_variable ack_cv;
  uint64_t acked = 0;
};

class SessionWrap : public Napi::ObjectWrap<SessionWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Session",
                       {InstanceMethod("prefill", &SessionWrap::Prefill),
                        InstanceMethod("compress", &SessionWrap::Compress),
                        InstanceMethod("generate", &SessionWrap::Generate),
                        InstanceMethod("cancel", &SessionWrap::Cancel),
                        InstanceMethod("truncate", &SessionWrap::Truncate),
                        InstanceMethod("forget", &SessionWrap::Forget),
                        InstanceMethod("packSpan", &SessionWrap::PackSpan),
                        InstanceMethod("reselect", &SessionWrap::Reselect),
                        InstanceMethod("compressSpan", &SessionWrap::CompressSpan),
                        InstanceMethod("fork", &SessionWrap::Fork),
                        InstanceMethod("save", &SessionWrap::Save),
                        InstanceMethod("appendSaved", &SessionWrap::AppendSaved),
                        InstanceMethod("tokens", &SessionWrap::Tokens),
                        InstanceMethod("lastLogits", &SessionWrap::LastLogits),
                        InstanceMethod("memory", &SessionWrap::Memory),
                        InstanceMethod("dispose", &SessionWrap::Dispose),
                        InstanceAccessor("nPast", &SessionWrap::NPast, nullptr),
                        InstanceAccessor("nCtx", &SessionWrap::NCtx, nullptr),
                        InstanceAccessor("nThreads", &SessionWrap::NThreads, nullptr),
                        InstanceAccessor("backend", &SessionWrap::BackendName, nullptr),
                        InstanceAccessor("busy", &SessionWrap::Busy, nullptr)});
  }

  explicit SessionWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SessionWrap>(info) {
    if (info.Length() != 1 || !info[0].IsExternal())
      throw js_error(info.Env(), "INVALID_ARGUMENT", "use model.createSession() to create a session");
    state_ = *info[0].As<Napi::External<std::shared_ptr<SessionState>>>().Data();
  }

 private:
  // The session, idle; throws DISPOSED or BUSY.
  SessionState& idle(Napi::Env env) {
    if (!state_) throw js_error(env, "DISPOSED", "the session has been disposed");
    if (state_->busy) throw js_error(env, "BUSY", "the session is running a prefill, a compression or a generation");
    return *state_;
  }

  // Starts an async job holding the session busy until it settles.
  Napi::Promise run(Napi::Env env, Job::Work work, Job::Result result, Job::OnEvent on_event = nullptr) {
    SessionState& s = idle(env);
    s.busy = true;
    s.cancel = false;
    auto st = state_;  // the job keeps the session alive even if JS disposes of it
    return Job::start(env, std::move(work), std::move(result), std::move(on_event), [st] { st->busy = false; });
  }

  static Job::OnEvent progress_events(Napi::Env env, const Napi::Object& o) {
    Napi::Value cb = o.Get("onProgress");
    if (cb.IsUndefined()) return nullptr;
    if (!cb.IsFunction()) throw js_error(env, "INVALID_ARGUMENT", "onProgress must be a function");
    auto ref = std::make_shared<Napi::FunctionReference>(Napi::Persistent(cb.As<Napi::Function>()));
    return [ref](Napi::Env env, const Event& e) {
      ref->Call({Napi::Number::New(env, double(e.a)), Napi::Number::New(env, double(e.b))});
    };
  }

  Napi::Value Prefill(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::vector<int32_t> tokens = token_array(env, info.Length() ? info[0] : env.Undefined(), "tokens");
    Napi::Object o = opts_arg(info, 1);
    const bool all = bool_opt(env, o, "allLogits", false);
    auto on_progress = progress_events(env, o);
    auto st = state_;
    struct Out {
      std::vector<float> logits;
      double seconds = 0;
    };
    auto out = std::make_shared<Out>();
    return run(
        env,
        [st, tokens, all, out](const Job::Emit& emit) {
          const auto t0 = std::chrono::steady_clock::now();
          st->session->prefill(
              tokens, all, out->logits,
              [&](int64_t d, int64_t t) {
                emit({d, t, {}});
              },
              &st->cancel);
          out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        },
        [st, out, n = tokens.size()](Napi::Env env) {
          Napi::Object r = Napi::Object::New(env);
          r.Set("logits", copy_floats(env, out->logits.data(), out->logits.size()));
          r.Set("nPast", st->session->context().n_past());
          r.Set("seconds", out->seconds);
          r.Set("tokensPerSecond", out->seconds > 0 ? double(n) / out->seconds : 0.0);
          return r;
        },
        on_progress);
  }

  Napi::Value Compress(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::vector<int32_t> tokens = token_array(env, info.Length() ? info[0] : env.Undefined(), "tokens");
    Napi::Object o = opts_arg(info, 1);
    const kv::CompressOptions opts = compress_options(env, o, "ada-snapkv");
    const ReadOptions read = read_options(env, o);
    auto on_progress = progress_events(env, o);
    auto st = state_;
    auto stats = std::make_shared<kv::CompressionStats>();
    return run(
        env,
        [st, tokens, opts, read, stats](const Job::Emit& emit) {
          *stats = st->session->compress(
              tokens, opts,
              [&](int64_t d, int64_t t) {
                emit({d, t, {}});
              },
              &st->cancel, read);
        },
        [st, stats](Napi::Env env) {
          Napi::Object r = Napi::Object::New(env);
          r.Set("stats", stats_to_js(env, *stats));
          const auto& lg = st->session->last_logits();
          r.Set("logits", copy_floats(env, lg.data(), lg.size()));
          r.Set("nPast", st->session->context().n_past());
          return r;
        },
        on_progress);
  }

  Napi::Value Generate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object o = opts_arg(info, 0);
    GenerateParams gp;
    gp.n = int32_t(num_opt(env, o, "n", 128, 0, 1 << 24));
    gp.sampling = sampling_params(env, o);
    gp.stop_at_eog = bool_opt(env, o, "stopAtEog", false);
    gp.collect_attention = bool_opt(env, o, "collectAttention", false);
    if (idle(env).session->last_logits().empty())
      throw js_error(env, "NO_PROMPT", "generate() needs a prefill first: there are no logits to sample from");
    Job::OnEvent on_event;
    Napi::Value cb = o.Get("onToken");
    if (!cb.IsUndefined()) {
      if (!cb.IsFunction()) throw js_error(env, "INVALID_ARGUMENT", "onToken must be a function");
      auto ref = std::make_shared<Napi::FunctionReference>(Napi::Persistent(cb.As<Napi::Function>()));
      auto st = state_;
      on_event = [ref, st](Napi::Env env, const Event& e) {
        Napi::Object t = Napi::Object::New(env);
        t.Set("id", double(e.a));
        t.Set("text", e.text);
        Napi::Value r;
        try {
          r = ref->Call({t});
        } catch (...) {
          st->cancel = true;  // a throwing callback stops generation too
        }
        if (!r.IsEmpty() && r.IsBoolean() && !r.As<Napi::Boolean>().Value()) st->cancel = true;  // asked to stop
        {
          std::lock_guard<std::mutex> lock(st->ack_mu);
          st->acked = uint64_t(e.b);
        }
        st->ack_cv.notify_all();
      };
    }
    auto st = state_;
    auto out = std::make_shared<GenerateResult>();
    return run(
        env,
        [st, gp, out, has_callback = bool(on_event)](const Job::Emit& emit) {
          uint64_t sent = 0;
          {
            std::lock_guard<std::mutex> lock(st->ack_mu);
            st->acked = 0;
          }
          *out = st->session->generate(
              gp,
              [&](int32_t id, const std::string& text) {
                emit({id, int64_t(++sent), text});
                if (!has_callback) return;
                std::unique_lock<std::mutex> lock(st->ack_mu);
                st->ack_cv.wait_for(lock, std::chrono::seconds(1), [&] { return st->acked >= sent; });
              },
              &st->cancel);
        },
        [st, out](Napi::Env env) {
          Napi::Object r = Napi::Object::New(env);
          Napi::Array ids = Napi::Array::New(env, out->tokens.size());
          for (size_t i = 0; i < out->tokens.size(); i++) ids.Set(uint32_t(i), out->tokens[i]);
          r.Set("tokens", ids);
          r.Set("text", out->text);
          r.Set("stopReason", out->stop_reason);
          r.Set("seconds", out->seconds);
          r.Set("tokensPerSecond", out->seconds > 0 ? double(out->tokens.size()) / out->seconds : 0.0);
          r.Set("nPast", st->session->context().n_past());
          // [layer] Float32Array over the positions before the answer (Session::generate), or null.
          if (out->attention.empty()) {
            r.Set("attention", env.Null());
          } else {
            Napi::Array layers = Napi::Array::New(env, out->attention.size());
            for (size_t l = 0; l < out->attention.size(); l++)
              layers.Set(uint32_t(l), copy_floats(env, out->attention[l].data(), out->attention[l].size()));
            r.Set("attention", layers);
          }
          return r;
        },
        on_event);
  }

  Napi::Value Save(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString()) throw js_error(env, "INVALID_ARGUMENT", "save(path) needs a path");
    const std::string path = info[0].As<Napi::String>().Utf8Value();
    const std::string meta = info.Length() > 1 && info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
    auto st = state_;
    return run(
        env, [st, path, meta](const Job::Emit&) { st->session->save(path, meta); }, nullptr);
  }

  // appendSaved(path, { from?, to?, pack? }): a saved session's entries of positions [from, to) after this one's
  // (Session::append_saved), off the JS thread (it reads the file).
  Napi::Value AppendSaved(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString())
      throw js_error(env, "INVALID_ARGUMENT", "appendSaved(path, { from, to }) needs a path");
    const std::string path = info[0].As<Napi::String>().Utf8Value();
    const Napi::Object o =
        info.Length() > 1 && info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);
    const int32_t from = int32_t(num_opt(env, o, "from", 0, 0, 1 << 30));
    const int32_t to = int32_t(num_opt(env, o, "to", -1, -1, 1 << 30));
    const bool pack = o.Has("pack") && o.Get("pack").ToBoolean().Value();
    auto st = state_;
    auto n_past = std::make_shared<int32_t>(0);
    return run(
        env,
        [st, path, from, to, pack, n_past](const Job::Emit&) {
          *n_past = st->session->append_saved(path, from, to, pack);
        },
        [n_past](Napi::Env env) {
          Napi::Object r = Napi::Object::New(env);
          r.Set("nPast", *n_past);
          return r;
        });
  }

  Napi::Value Fork(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    SessionState& s = idle(env);
    return wrap_session(env, guard(env, [&] { return s.session->fork(); }));
  }

  Napi::Value Cancel(const Napi::CallbackInfo& info) {
    if (state_) state_->cancel = true;
    return info.Env().Undefined();
  }

  Napi::Value Truncate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsNumber()) throw js_error(env, "INVALID_ARGUMENT", "truncate(n) needs a number");
    SessionState& s = idle(env);
    guard(env, [&] { s.session->truncate(info[0].As<Napi::Number>().Int32Value()); });
    return env.Undefined();
  }

  Napi::Value Forget(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
      throw js_error(env, "INVALID_ARGUMENT", "forget(from, to) needs two numbers");
    SessionState& s = idle(env);
    guard(env,
          [&] { s.session->forget(info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Number>().Int32Value()); });
    return env.Undefined();
  }

  // packSpan(from, to) → n_past: the span's entries on contiguous positions (Session::pack_span).
  Napi::Value PackSpan(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
      throw js_error(env, "INVALID_ARGUMENT", "packSpan(from, to) needs two numbers");
    SessionState& s = idle(env);
    const int32_t n = guard(env, [&] {
      return s.session->pack_span(info[0].As<Napi::Number>().Int32Value(), info[1].As<Napi::Number>().Int32Value());
    });
    return Napi::Number::New(env, n);
  }

  // reselect(spans, { keep, alpha?, acrossLayers? }) → { entries: Int32Array[] }: one budget over the documents
  // at positions spans ([from, to) pairs, back to back: [from0, to0, from1, to1, ...]), each span's entries per
  // (layer, head) after (Session::reselect). keep 1 re-selects nothing: it only counts.
  Napi::Value Reselect(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 2 || !info[1].IsObject())
      throw js_error(env, "INVALID_ARGUMENT", "reselect(spans, { keep }) needs the spans and the share to keep");
    const std::vector<int32_t> flat = token_array(env, info[0], "spans");
    if (flat.size() % 2) throw js_error(env, "INVALID_ARGUMENT", "reselect: spans come in [from, to) pairs");
    std::vector<std::pair<int32_t, int32_t>> spans;
    for (size_t i = 0; i < flat.size(); i += 2) spans.emplace_back(flat[i], flat[i + 1]);
    const Napi::Object o = info[1].As<Napi::Object>();
    const double keep = num_opt(env, o, "keep", 1, 0, 1);
    const double alpha = num_opt(env, o, "alpha", 0, 0, 1);
    const bool across = o.Has("acrossLayers") && o.Get("acrossLayers").ToBoolean().Value();
    SessionState& s = idle(env);
    const auto entries = guard(env, [&] { return s.session->reselect(spans, keep, alpha, across); });
    Napi::Array out = Napi::Array::New(env, entries.size());
    for (size_t i = 0; i < entries.size(); i++) {
      Napi::Int32Array a = Napi::Int32Array::New(env, entries[i].size());
      std::copy(entries[i].begin(), entries[i].end(), a.Data());
      out.Set(uint32_t(i), a);
    }
    Napi::Object r = Napi::Object::New(env);
    r.Set("entries", out);
    return r;
  }

  // compressSpan(from, to, keepRatio, windowTokens): a conversation's older turns compressed by the attention of
  // the next question (Session::compress_span), off the JS thread (it runs the question through the model).
  Napi::Value CompressSpan(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() < 4 || !info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsNumber())
      throw js_error(env, "INVALID_ARGUMENT", "compressSpan(from, to, keepRatio, windowTokens) needs three numbers");
    const int32_t from = info[0].As<Napi::Number>().Int32Value(), to = info[1].As<Napi::Number>().Int32Value();
    const double ratio = info[2].As<Napi::Number>().DoubleValue();
    std::vector<int32_t> window = token_array(env, info[3], "windowTokens");
    auto st = state_;
    auto n_past = std::make_shared<int32_t>(0);
    return run(
        env,
        [st, from, to, ratio, window, n_past](const Job::Emit&) {
          *n_past = st->session->compress_span(from, to, ratio, window, &st->cancel);
        },
        [n_past](Napi::Env env) {
          Napi::Object r = Napi::Object::New(env);
          r.Set("nPast", *n_past);
          return r;
        });
  }

  Napi::Value Tokens(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto& t = idle(env).session->tokens();
    Napi::Int32Array a = Napi::Int32Array::New(env, t.size());
    std::copy(t.begin(), t.end(), a.Data());
    return a;
  }

  Napi::Value LastLogits(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const auto& lg = idle(env).session->last_logits();
    return copy_floats(env, lg.data(), lg.size());
  }

  // What the cache holds: bytes in use and reserved, element type, and every head's length per layer.
  Napi::Value Memory(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const FlatKvCache& c = idle(env).session->context().cache();
    Napi::Object o = Napi::Object::New(env);
    o.Set("kvType", kv_format_name(c.format()));
    o.Set("bytesUsed", double(c.bytes_used()));
    o.Set("bytesReserved", double(c.bytes_reserved()));
    o.Set("entryBytes", double(c.k_entry_bytes() + c.v_entry_bytes()));
    Napi::Array layers = Napi::Array::New(env, size_t(c.n_layer()));
    for (int l = 0; l < c.n_layer(); l++) {
      Napi::Array heads = Napi::Array::New(env, size_t(c.n_head_kv()));
      for (int h = 0; h < c.n_head_kv(); h++) heads.Set(uint32_t(h), c.len(l, h));
      layers.Set(uint32_t(l), heads);
    }
    o.Set("headLengths", layers);
    return o;
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (state_ && state_->busy) throw js_error(info.Env(), "BUSY", "cancel the running operation before disposing");
    state_.reset();
    return info.Env().Undefined();
  }

  Napi::Value NPast(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? state_->session->context().n_past() : 0);
  }
  Napi::Value NCtx(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? state_->session->context().n_ctx() : 0);
  }
  Napi::Value BackendName(const Napi::CallbackInfo& info) {
    return Napi::String::New(info.Env(), state_ ? backend_name(state_->session->context().backend()) : "cpu");
  }
  Napi::Value NThreads(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), state_ ? state_->session->context().n_threads() : 0);
  }
  Napi::Value Busy(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), state_ && state_->busy); }

  std::shared_ptr<SessionState> state_;
};

}  // namespace

ContextParams context_params(Napi::Env env, const Napi::Object& o) {
  ContextParams cp;
  cp.n_ctx = int32_t(num_opt(env, o, "nCtx", 0, 0, 1 << 30));
  cp.n_batch = int32_t(num_opt(env, o, "nBatch", 512, 1, 1 << 20));
  cp.n_threads = int(num_opt(env, o, "nThreads", 0, 0, 1024));
  // kvType: keys and values; kvTypeK / kvTypeV: one of them otherwise; kvRotate: the quantized ones rotated.
  const auto kv_type = [&](const char* key, KvType fallback) {
    const std::string name = str_opt(env, o, key, kv_type_name(fallback));
    KvType t;
    if (!kv_type_from_name(name, &t))
      throw js_error(env, "INVALID_ARGUMENT", std::string(key) + " must be 'f32', 'f16', 'q8_0' or 'q4_0'");
    return t;
  };
  const KvType both = kv_type("kvType", KvType::F16);
  cp.kv = KvFormat{kv_type("kvTypeK", both), kv_type("kvTypeV", both), bool_opt(env, o, "kvRotate", false)};
  const std::string att = str_opt(env, o, "attention", "fast");
  if (att != "fast" && att != "reference")
    throw js_error(env, "INVALID_ARGUMENT", "attention must be 'fast' or 'reference'");
  cp.reference_attention = att == "reference";
  // 'auto': the GPU the loader chose (CUDA, else a discrete Vulkan GPU), else the CPU (the reference attention
  // is CPU-only). A named GPU that is unusable fails when the context is made (GPU_UNAVAILABLE, with why).
  const std::string be = str_opt(env, o, "backend", "auto");
  if (be == "auto") cp.backend = automatic_backend(cp);
  else if (!backend_from_name(be, cp.backend))
    throw js_error(env, "INVALID_ARGUMENT", "backend must be 'auto', 'cpu', 'cuda' or 'vulkan'");
  return cp;
}

Napi::Value wrap_session(Napi::Env env, std::unique_ptr<Session> s) {
  auto st = std::make_shared<SessionState>();
  st->session = std::move(s);
  auto ext =
      Napi::External<std::shared_ptr<SessionState>>::New(env, new std::shared_ptr<SessionState>(st),
                                                         [](Napi::Env, std::shared_ptr<SessionState>* p) { delete p; });
  return registry(env).session.New({ext});
}

void init_session(Napi::Env env, Napi::Object) { registry(env).session = Napi::Persistent(SessionWrap::Define(env)); }

}  // namespace folio::napi
