// A fixed pool of worker threads that run parallel loops; threads are created once, not per operation.
//
// Dispatch is built for the many short loops of a decode step (a few microseconds each): the caller
// publishes the loop and bumps a generation counter, workers that are spinning see it at once; a worker
// that found nothing to do for a while (kSpinMicros) goes to sleep on a condition variable and is woken
// by the next dispatch. Spinning threads yield their core every few microseconds, so that on a machine
// with more runnable threads than cores the thread being waited for is not starved by the waiters. The loop body is
// passed by reference (FnRef: a pointer and a trampoline), so nothing is allocated per call. The caller runs items too
// and then waits, spinning, for the workers to finish theirs.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace folio {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads counts the calling thread; 0 = hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // A non-owning reference to a callable fn(int64_t i, int thread); valid while the callable lives.
  class FnRef {
   public:
    template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FnRef>>>
    FnRef(F&& f)  // NOLINT: implicit on purpose, so that lambdas convert
        : obj_(const_cast<void*>(static_cast<const void*>(&f))),
          call_([](void* o, int64_t i, int t) { (*static_cast<std::remove_reference_t<F>*>(o))(i, t); }) {}
    void operator()(int64_t i, int t) const { call_(obj_, i, t); }

   private:
    void* obj_;
    void (*call_)(void*, int64_t, int);
  };

  // Runs fn(i, thread) for every i in [0, n) and returns when all are done. Items are handed out in
  // chunks of `chunk` from a shared counter; `thread` is in [0, size()) and can index per-thread scratch
  // space. Any callable works (a lambda, a std::function); none is copied.
  void parallel_for(int64_t n, FnRef fn, int64_t chunk = 1);

  // Runs fn(begin, end, thread) over ranges of at most `step` items that together cover [0, n) once, for
  // streaming work such as a matrix-vector product: [0, n) is cut into one contiguous part per thread,
  // which its thread takes from the front, a step at a time; a thread done with its own part takes steps
  // from the back of the others'. So each thread reads one long run of memory (the hardware prefetchers
  // stay ahead of it; many short scattered tasks ran 10–15% slower), and a thread slowed down by the rest
  // of the machine still has its work taken over.
  template <typename F>
  void parallel_ranges(int64_t n, int64_t step, F&& fn) {
    if (n <= 0) return;
    step = std::max<int64_t>(1, step);
    if (workers_.empty() || n <= step) {
      for (int64_t b = 0; b < n; b += step) fn(b, std::min(n, b + step), 0);
      return;
    }
    if (n >= (int64_t(1) << 31)) {  // beyond the cursors' 32 bits: plain steps
      parallel_for((n + step - 1) / step,
                   [&](int64_t i, int thread) { fn(i * step, std::min(n, (i + 1) * step), thread); });
      return;
    }
    RangeSplit split(n, step, n_threads_);
    const int parts = split.parts();
    auto body = [&](int64_t home, int thread) {
      int64_t b, e;
      while (split.take_front(int(home), &b, &e)) fn(b, e, thread);
      for (int k = 1; k < parts; k++)
        while (split.take_back(int((home + k) % parts), &b, &e)) fn(b, e, thread);
    };
    dispatch(parts, FnRef(body), 1, /*one_each=*/false);
  }

  // Runs fn(thread, size()) once on every thread of the pool (the caller is thread 0), for work that
  // splits itself statically.
  template <typename F>
  void run_on_all(F&& fn) {
    const int nt = n_threads_;
    auto body = [&](int64_t i, int) { fn(int(i), nt); };
    dispatch(nt, FnRef(body), 1, /*one_each=*/true);
  }

  static int default_threads();

 private:
  // parallel_ranges' bookkeeping: per range the next row from the front and the end from the back, both
  // in one atomic word, so that the owner and a thief never take the same step.
  class RangeSplit {
   public:
    RangeSplit(int64_t n, int64_t step, int parts);
    int parts() const { return parts_; }
    bool take_front(int part, int64_t* begin, int64_t* end);
    bool take_back(int part, int64_t* begin, int64_t* end);

   private:
    struct alignas(64) Cursor {
      std::atomic<uint64_t> v{0};  // front in the low 32 bits, end in the high
    };
    static constexpr int kMaxParts = 64;  // a larger pool runs 64 ranges
    int64_t step_;
    int parts_;
    Cursor cur_[kMaxParts];
  };

  void dispatch(int64_t n, FnRef fn, int64_t chunk, bool one_each);
  void worker(int index);
  void run_items(int thread);
  void wait_for(const std::atomic<int>& count);

  static constexpr int kSpinMicros = 500;

  int n_threads_;
  std::vector<std::thread> workers_;

  // The published loop; written by the caller before the generation bump, read by workers after.
  const FnRef* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  alignas(64) std::atomic<int64_t> next_{0};
  // 2·(loops dispatched) + 1 for a run_on_all loop: a worker knows a loop's kind from the value it saw.
  alignas(64) std::atomic<uint64_t> generation_{0};
  // parallel_for: once every item is taken the caller closes the loop (closed_ = its generation) and
  // waits only for the workers that joined it (running_); a worker that comes later sees it closed and
  // leaves fn_ alone. So a worker that is not scheduled (a busy machine) never holds the caller up.
  alignas(64) std::atomic<uint64_t> closed_{0};
  std::atomic<int> running_{0};
  // run_on_all: every worker must run its item; the caller waits for all of them.
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable wake_;
};

}  // namespace folio
