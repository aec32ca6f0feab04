// Binding of sessions (see session.cc).
#pragma once
#include <memory>

#include <napi.h>

#include "session/context.h"
#include "session/session.h"

namespace folio::napi {

// Context options from JS: nCtx, nBatch, nThreads, kvType ('f16' | 'f32'), attention ('fast' | 'reference').
ContextParams context_params(Napi::Env env, const Napi::Object& o);
// A JS Session object owning `s`.
Napi::Value wrap_session(Napi::Env env, std::unique_ptr<Session> s);
void init_session(Napi::Env env, Napi::Object exports);

}  // namespace folio::napi
