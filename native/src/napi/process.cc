// Process control for the engine host (electron/engine/host-exit.ts): a parent-death signal and an exit
// that does not wait. Node's own process.exit() joins the libuv thread pool first, so a generation or a
// prefill running there keeps an orphaned host alive until it ends; the host uses exitNow() instead once
// its parent is gone.
#include <cstdlib>

#ifdef __linux__
#include <csignal>
#include <sys/prctl.h>
#endif

#include "napi/common.h"

namespace folio::napi {

namespace {

// setParentDeathSignal(signal): on Linux the kernel sends `signal` to this process the moment the thread
// that started it exits, even while its event loop is blocked. true where that is set up, false where the
// platform has no such thing (the host's ppid watchdog covers those).
Napi::Value SetParentDeathSignal(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber())
    throw js_error(env, "INVALID_ARGUMENT", "setParentDeathSignal(signal) needs a signal number");
  const int32_t sig = info[0].As<Napi::Number>().Int32Value();
  if (sig < 0 || sig > 64) throw js_error(env, "INVALID_ARGUMENT", "setParentDeathSignal: not a signal number");
#ifdef __linux__
  return Napi::Boolean::New(env, prctl(PR_SET_PDEATHSIG, static_cast<unsigned long>(sig)) == 0);
#else
  return Napi::Boolean::New(env, false);
#endif
}

// exitNow(code): ends the process at once, without joining worker threads or running exit handlers.
Napi::Value ExitNow(const Napi::CallbackInfo& info) {
  const int code = info.Length() > 0 && info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : 0;
  std::_Exit(code);
}

}  // namespace

void init_process(Napi::Env env, Napi::Object exports) {
  exports.Set("setParentDeathSignal", Napi::Function::New(env, SetParentDeathSignal, "setParentDeathSignal"));
  exports.Set("exitNow", Napi::Function::New(env, ExitNow, "exitNow"));
}

}  // namespace folio::napi
