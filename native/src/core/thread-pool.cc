#include "core/thread-pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace folio {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

using Clock = std::chrono::steady_clock;

}  // namespace

int ThreadPool::default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : int(std::min(n, 64u));
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads > 0 ? n_threads : default_threads()) {
  for (int i = 1; i < n_threads_; i++) workers_.emplace_back(&ThreadPool::worker, this, i);
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_items(int thread) {
  const FnRef& fn = *fn_;
  const int64_t n = n_, chunk = chunk_;
  for (;;) {
    const int64_t start = next_.fetch_add(chunk, std::memory_order_relaxed);
    if (start >= n) break;
    const int64_t end = std::min(n, start + chunk);
    for (int64_t i = start; i < end; i++) fn(i, thread);
  }
}

void ThreadPool::wait_for(const std::atomic<int>& count) {
  // Spin, yielding now and then in case the thread waited for lost its core.
  for (int spins = 1; count.load(std::memory_order_acquire) != 0; ++spins) {
    cpu_relax();
    if ((spins & 63) == 0) std::this_thread::yield();
  }
}

void ThreadPool::worker(int index) {
  // Generation 0 is the pool's state before any loop; a worker that starts late must still run the
  // loops dispatched before it got going.
  uint64_t seen = 0;
  for (;;) {
    // Spin for a while: the next loop of a forward pass usually comes within microseconds.
    uint64_t g = generation_.load(std::memory_order_acquire);
    if (g == seen) {
      const Clock::time_point t0 = Clock::now();
      for (int spins = 1;; ++spins) {
        cpu_relax();
        g = generation_.load(std::memory_order_acquire);
        if (g != seen || stop_.load(std::memory_order_relaxed)) break;
        if ((spins & 63) != 0) continue;
        // Let another thread have this core now and then: when the machine has more runnable threads
        // than cores, the one we wait for may be queued behind us.
        std::this_thread::yield();
        if (Clock::now() - t0 > std::chrono::microseconds(kSpinMicros)) {
          // Nothing came: sleep until the next dispatch. The caller checks sleepers_ after bumping the
          // generation (both sequentially consistent), so either it sees us and notifies under the
          // mutex, or we see the new generation in the predicate.
          std::unique_lock<std::mutex> lock(mu_);
          sleepers_.fetch_add(1);
          wake_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
          sleepers_.fetch_sub(1);
          g = generation_.load(std::memory_order_acquire);
          break;
        }
      }
    }
    if (stop_.load()) return;
    seen = g;
    if (g & 1) {  // run_on_all: this thread's own item
      if (index < n_) (*fn_)(index, index);
      pending_.fetch_sub(1, std::memory_order_release);
      continue;
    }
    // Join the loop unless the caller has closed it already (both sequentially consistent: either the
    // caller sees us in running_ and waits, or we see the loop closed).
    running_.fetch_add(1);
    if (closed_.load() < g) run_items(index);
    running_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::parallel_for(int64_t n, FnRef fn, int64_t chunk) {
  if (n <= 0) return;
  chunk = std::max<int64_t>(1, chunk);
  if (workers_.empty() || n <= chunk) {
    for (int64_t i = 0; i < n; i++) fn(i, 0);
    return;
  }
  dispatch(n, fn, chunk, false);
}

ThreadPool::RangeSplit::RangeSplit(int64_t n, int64_t step, int parts)
    : step_(step), parts_(std::min(parts, kMaxParts)) {
  // Boundaries on multiples of step, so that the owner's steps are whole.
  const int64_t units = (n + step - 1) / step;
  for (int p = 0; p < parts_; p++) {
    const int64_t b = std::min(n, units * p / parts_ * step), e = std::min(n, units * (p + 1) / parts_ * step);
    cur_[p].v.store(uint64_t(b) | (uint64_t(e) << 32), std::memory_order_relaxed);
  }
}

bool ThreadPool::RangeSplit::take_front(int part, int64_t* begin, int64_t* end) {
  uint64_t v = cur_[part].v.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t f = int64_t(v & 0xffffffffu), e = int64_t(v >> 32);
    if (f >= e) return false;
    const int64_t nf = std::min(e, f + step_);
    if (cur_[part].v.compare_exchange_weak(v, uint64_t(nf) | (uint64_t(e) << 32), std::memory_order_relaxed)) {
      *begin = f, *end = nf;
      return true;
    }
  }
}

bool ThreadPool::RangeSplit::take_back(int part, int64_t* begin, int64_t* end) {
  uint64_t v = cur_[part].v.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t f = int64_t(v & 0xffffffffu), e = int64_t(v >> 32);
    if (f >= e) return false;
    const int64_t nb = std::max(f, e - step_);
    if (cur_[part].v.compare_exchange_weak(v, uint64_t(f) | (uint64_t(nb) << 32), std::memory_order_relaxed)) {
      *begin = nb, *end = e;
      return true;
    }
  }
}

void ThreadPool::dispatch(int64_t n, FnRef fn, int64_t chunk, bool one_each) {
  if (workers_.empty()) {
    for (int64_t i = 0; i < n; i++) fn(i, 0);
    return;
  }
  fn_ = &fn;
  n_ = n;
  chunk_ = chunk;
  next_.store(0, std::memory_order_relaxed);
  if (one_each) pending_.store(int(workers_.size()), std::memory_order_relaxed);
  // Publishes the loop (sequentially consistent, see worker()): the next even value, +1 for run_on_all.
  const uint64_t g = (generation_.load(std::memory_order_relaxed) | 1) + 1 + (one_each ? 1 : 0);
  generation_.store(g);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }
    wake_.notify_all();
  }
  if (one_each) {
    fn(0, 0);
    wait_for(pending_);
  } else {
    run_items(0);
    closed_.store(g);
    wait_for(running_);
  }
  fn_ = nullptr;
}

}  // namespace folio
