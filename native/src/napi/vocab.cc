// exports.openVocab(path): the tokenizer of a GGUF file as a JS object (the Vocab interface of
// electron/engine/binding.ts). The native vocabulary lives as long as the JS object and is freed by the GC.
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "napi/common.h"
#include "tokenizer/vocab.h"

namespace folio::napi {
namespace {

class VocabWrap : public Napi::ObjectWrap<VocabWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Vocab",
                       {InstanceMethod("info", &VocabWrap::Info), InstanceMethod("tokenize", &VocabWrap::Tokenize),
                        InstanceMethod("tokenToPiece", &VocabWrap::TokenToPiece),
                        InstanceMethod("detokenize", &VocabWrap::Detokenize),
                        InstanceMethod("detokenizeSteps", &VocabWrap::DetokenizeSteps)});
  }

  // Called through openVocab only, with the path as its argument.
  explicit VocabWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<VocabWrap>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsString())
      throw js_error(env, "INVALID_ARGUMENT", "openVocab(path): path must be a string");
    const std::string path = info[0].As<Napi::String>().Utf8Value();
    guard(env, [&] {
      std::unique_ptr<gguf::File> file = gguf::File::open(path);
      vocab_ = Vocab::from_gguf(*file);
    });
    // Tell V8 how much native memory this small JS object keeps alive, so that the GC collects it in time.
    accounted_ = int64_t(vocab_->memory_bytes());
    Napi::MemoryManagement::AdjustExternalMemory(env, accounted_);
  }

  ~VocabWrap() override {
    if (accounted_) Napi::MemoryManagement::AdjustExternalMemory(Env(), -accounted_);
  }

 private:
  Napi::Value Info(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const Vocab& v = *vocab_;
    Napi::Object o = Napi::Object::New(env);
    o.Set("model", v.model());
    o.Set("pre", v.pre());
    o.Set("nTokens", v.n_tokens());
    o.Set("bos", v.bos());
    o.Set("eos", v.eos());
    o.Set("eot", v.eot());
    o.Set("unk", v.unk());
    o.Set("pad", v.pad());
    o.Set("addBos", v.add_bos());
    o.Set("addEos", v.add_eos());
    Napi::Array eog = Napi::Array::New(env, v.eog_ids().size());
    for (size_t i = 0; i < v.eog_ids().size(); i++) eog.Set(uint32_t(i), v.eog_ids()[i]);
    o.Set("eog", eog);
    return o;
  }

  // tokenize(text, { addSpecial = true, parseSpecial = false }). text may also be a Uint8Array of raw bytes,
  // which lets callers (and tests) pass bytes that are not valid UTF-8.
  Napi::Value Tokenize(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    std::string text;
    if (info.Length() >= 1 && info[0].IsString()) {
      text = info[0].As<Napi::String>().Utf8Value();
    } else if (info.Length() >= 1 && info[0].IsTypedArray() &&
               info[0].As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array) {
      Napi::Uint8Array a = info[0].As<Napi::Uint8Array>();
      text.assign(reinterpret_cast<const char*>(a.Data()), a.ByteLength());
    } else {
      throw js_error(env, "INVALID_ARGUMENT", "tokenize(text): text must be a string");
    }
    bool add_special = true, parse_special = false;
    if (info.Length() >= 2 && !info[1].IsUndefined()) {
      if (!info[1].IsObject()) throw js_error(env, "INVALID_ARGUMENT", "tokenize: options must be an object");
      Napi::Object o = info[1].As<Napi::Object>();
      add_special = flag(o, "addSpecial", add_special);
      parse_special = flag(o, "parseSpecial", parse_special);
    }
    std::vector<int32_t> ids = guard(env, [&] { return vocab_->tokenize(text, add_special, parse_special); });
    Napi::Int32Array out = Napi::Int32Array::New(env, ids.size());
    std::copy(ids.begin(), ids.end(), out.Data());
    return out;
  }

  // tokenToPiece(id, special = false) -> Uint8Array
  Napi::Value TokenToPiece(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const int32_t id = token_arg(env, info.Length() >= 1 ? info[0] : env.Undefined());
    const bool special = info.Length() >= 2 && info[1].ToBoolean().Value();
    std::string piece = guard(env, [&] { return vocab_->token_to_piece(id, special); });
    return copy_bytes(env, piece.data(), piece.size());
  }

  // detokenize(ids, { special = false }) -> string
  Napi::Value Detokenize(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::vector<int32_t> ids = ids_arg(info, "detokenize");
    const bool special = special_opt(info);
    std::string text = guard(env, [&] { return vocab_->detokenize(ids, special); });
    return Napi::String::New(env, text);
  }

  // detokenizeSteps(ids, { special = false }) -> string[]: what a Utf8Stream releases after each token's piece
  // is pushed, then what flush() adds. This is how generation streams text; tests use it to check that split
  // characters come out whole.
  Napi::Value DetokenizeSteps(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const std::vector<int32_t> ids = ids_arg(info, "detokenizeSteps");
    const bool special = special_opt(info);
    std::vector<std::string> steps = guard(env, [&] {
      std::vector<std::string> r;
      Utf8Stream stream;
      for (int32_t id : ids) r.push_back(stream.push(vocab_->token_to_piece(id, special)));
      r.push_back(stream.flush());
      return r;
    });
    Napi::Array out = Napi::Array::New(env, steps.size());
    for (size_t i = 0; i < steps.size(); i++) out.Set(uint32_t(i), Napi::String::New(env, steps[i]));
    return out;
  }

  std::vector<int32_t> ids_arg(const Napi::CallbackInfo& info, const char* fn) const {
    Napi::Env env = info.Env();
    if (info.Length() < 1 || !info[0].IsObject())
      throw js_error(env, "INVALID_ARGUMENT", std::string(fn) + "(ids): ids must be an array of token ids");
    std::vector<int32_t> ids;
    if (info[0].IsTypedArray() && info[0].As<Napi::TypedArray>().TypedArrayType() == napi_int32_array) {
      Napi::Int32Array a = info[0].As<Napi::Int32Array>();
      ids.assign(a.Data(), a.Data() + a.ElementLength());
      for (int32_t id : ids)
        if (id < 0 || id >= vocab_->n_tokens()) throw bad_token(env, double(id));
    } else {
      Napi::Object a = info[0].As<Napi::Object>();
      const Napi::Value len = a.Get("length");
      if (!len.IsNumber()) throw js_error(env, "INVALID_ARGUMENT", std::string(fn) + "(ids): ids must be array-like");
      const uint32_t n = len.As<Napi::Number>().Uint32Value();
      ids.reserve(n);
      for (uint32_t i = 0; i < n; i++) ids.push_back(token_arg(env, a.Get(i)));
    }
    return ids;
  }

  static bool special_opt(const Napi::CallbackInfo& info) {
    return info.Length() >= 2 && info[1].IsObject() && flag(info[1].As<Napi::Object>(), "special", false);
  }

  static bool flag(const Napi::Object& o, const char* key, bool def) {
    const Napi::Value v = o.Get(key);
    return v.IsUndefined() ? def : v.ToBoolean().Value();
  }

  int32_t token_arg(Napi::Env env, const Napi::Value& v) const {
    if (!v.IsNumber()) throw js_error(env, "INVALID_ARGUMENT", "a token id must be a number");
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= 0 && d < vocab_->n_tokens()) || d != double(int64_t(d))) throw bad_token(env, d);
    return int32_t(d);
  }

  Napi::Error bad_token(Napi::Env env, double d) const {
    return js_error(env, "INVALID_TOKEN",
                    "token id " + Napi::Number::New(env, d).ToString().Utf8Value() +
                        " is outside the vocabulary (0 to " + std::to_string(vocab_->n_tokens() - 1) + ")");
  }

  std::unique_ptr<Vocab> vocab_;
  int64_t accounted_ = 0;
};

Napi::Value OpenVocab(const Napi::CallbackInfo& info) {
  auto* ctor = static_cast<Napi::FunctionReference*>(info.Data());
  std::vector<napi_value> args;
  for (size_t i = 0; i < info.Length(); i++) args.push_back(info[i]);
  return ctor->New(args);
}

}  // namespace

void init_vocab(Napi::Env env, Napi::Object exports) {
  // The class itself stays private: openVocab is the only way to make one. Its constructor reference lives as
  // long as the addon's environment.
  auto* ctor = new Napi::FunctionReference(Napi::Persistent(VocabWrap::Define(env)));
  env.AddCleanupHook([ctor] { delete ctor; });
  exports.Set("openVocab", Napi::Function::New(env, OpenVocab, "openVocab", ctor));
}

}  // namespace folio::napi
