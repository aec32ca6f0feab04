// Shared pieces of the Node-API binding: module registration and error conversion.
#pragma once
#include <napi.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace folio::napi {

// Each binding file registers its functions on the exports object.
void init_gguf(Napi::Env env, Napi::Object exports);    // gguf.cc: GGUF headers
void init_ops(Napi::Env env, Napi::Object exports);     // ops.cc: kernel-level entry points for tests
void init_vocab(Napi::Env env, Napi::Object exports);   // vocab.cc: tokenizers from GGUF vocabularies
void init_model(Napi::Env env, Napi::Object exports);   // model.cc: models and their sessions
void init_kv_ops(Napi::Env env, Napi::Object exports);  // kv-ops.cc: the pieces of KV compression, for tests

// Constructors of the binding's classes, kept per environment.
struct Registry {
  Napi::FunctionReference model;
  Napi::FunctionReference session;
};
Registry& registry(Napi::Env env);

// A JS Error with `code` set; folio::Error keeps its code, anything else becomes INTERNAL.
Napi::Error js_error(Napi::Env env, const std::string& code, const std::string& message);

// Runs fn (on any thread); a thrown error is kept as (code, message) for a promise's rejection.
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

// Runs fn and converts C++ exceptions into JS exceptions (thrown in env).
template <typename F>
auto guard(Napi::Env env, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const folio::Error& e) { throw js_error(env, e.code(), e.what()); } catch (const Napi::Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw js_error(env, "OUT_OF_MEMORY", "out of memory");
  } catch (const std::exception& e) { throw js_error(env, "INTERNAL", e.what()); }
}

// Reading arguments: every check fails with a JS Error of code INVALID_ARGUMENT naming the argument.
std::vector<int32_t> token_array(Napi::Env env, const Napi::Value& v, const char* what);
Napi::Object opts_arg(const Napi::CallbackInfo& info, size_t i);  // an options object, {} when absent
double num_opt(Napi::Env env, const Napi::Object& o, const char* key, double def, double lo, double hi);
bool bool_opt(Napi::Env env, const Napi::Object& o, const char* key, bool def);
std::string str_opt(Napi::Env env, const Napi::Object& o, const char* key, const std::string& def);

// Copies bytes into a fresh JS-owned buffer (Electron forbids external buffers pointing at native memory).
Napi::Uint8Array copy_bytes(Napi::Env env, const void* data, size_t n);
Napi::Float32Array copy_floats(Napi::Env env, const float* data, size_t n);

}  // namespace folio::napi
