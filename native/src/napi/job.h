// Async operations of the binding. `work` runs on a worker thread and may emit events; the events reach
// `on_event` on the JS thread in order; the promise resolves with `result` (built on the JS thread) or
// rejects with the error's code and message. `release` runs on the JS thread just before either.
#pragma once
#include <functional>
#include <string>

#include <napi.h>

#include "napi/common.h"

namespace folio::napi {

struct Event {
  int64_t a = 0, b = 0;  // progress: done, total; token: id
  std::string text;      // token: the text it completed
};

class Job : public Napi::AsyncProgressQueueWorker<Event> {
 public:
  using Emit = std::function<void(Event)>;
  using Work = std::function<void(const Emit&)>;
  using Result = std::function<Napi::Value(Napi::Env)>;
  using OnEvent = std::function<void(Napi::Env, const Event&)>;

  // Queues the job and returns its promise.
  static Napi::Promise start(Napi::Env env, Work work, Result result, OnEvent on_event = nullptr,
                             std::function<void()> release = nullptr) {
    auto* job = new Job(env, std::move(work), std::move(result), std::move(on_event), std::move(release));
    Napi::Promise p = job->deferred_.Promise();
    job->Queue();
    return p;
  }

 private:
  Job(Napi::Env env, Work work, Result result, OnEvent on_event, std::function<void()> release)
      : Napi::AsyncProgressQueueWorker<Event>(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        work_(std::move(work)),
        result_(std::move(result)),
        on_event_(std::move(on_event)),
        release_(std::move(release)) {}

  void Execute(const ExecutionProgress& progress) override {
    std::string message;
    const bool ok = capture_errors([&] { work_([&](Event e) { progress.Send(&e, 1); }); }, code_, message);
    if (!ok) SetError(message);
  }
  void OnProgress(const Event* ev, size_t count) override {
    if (!on_event_) return;
    for (size_t i = 0; i < count; i++) on_event_(Env(), ev[i]);
  }
  void OnOK() override {
    if (release_) release_();
    Napi::Value v;
    try {
      v = result_ ? result_(Env()) : Env().Undefined();
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
      return;
    }
    deferred_.Resolve(v);
  }
  void OnError(const Napi::Error& e) override {
    if (release_) release_();
    deferred_.Reject(js_error(Env(), code_, e.Message()).Value());
  }

  Napi::Promise::Deferred deferred_;
  Work work_;
  Result result_;
  OnEvent on_event_;
  std::function<void()> release_;
  std::string code_ = "INTERNAL";
};

}  // namespace folio::napi
