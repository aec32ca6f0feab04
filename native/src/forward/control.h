// Cancellation and progress of a forward pass, for every backend in one place: the pass calls check()
// between its operations (the CPU's long kernels also stop early on the same flag, Backend::set_stop; a
// GPU's queued work is simply not followed by more), and tokens() when a share of the tokens is done.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>

#include "backend/backend.h"
#include "core/error.h"

namespace folio::forward {

// Called during a prefill with (tokens done, tokens total).
using ProgressFn = std::function<void(int64_t done, int64_t total)>;

class Control {
 public:
  Control(backend::Backend& be, const ProgressFn& progress, const std::atomic<bool>* cancel)
      : be_(be), progress_(progress), cancel_(cancel) {
    be_.set_stop(cancel);
  }
  ~Control() { be_.set_stop(nullptr); }
  Control(const Control&) = delete;
  Control& operator=(const Control&) = delete;

  // Throws CANCELLED once the flag is set.
  void check() const {
    if (cancel_ && cancel_->load(std::memory_order_relaxed)) fail("CANCELLED", "cancelled");
  }
  // Reports `done` of `total` tokens when that is more than reported before, once the work is (a GPU's
  // queue is waited for).
  void tokens(int64_t done, int64_t total) {
    if (!progress_ || done <= reported_) return;
    be_.synchronize();
    check();
    progress_(reported_ = done, total);
  }

 private:
  backend::Backend& be_;
  ProgressFn progress_;  // a copy: a temporary passed in (nullptr, a lambda) would not outlive the call
  const std::atomic<bool>* cancel_;
  int64_t reported_ = 0;
};

}  // namespace folio::forward
