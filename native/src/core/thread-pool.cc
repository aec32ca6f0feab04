#include "core/thread-pool.h"

#include <algorithm>

namespace folio {

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
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_items(int thread) {
  for (;;) {
    const int64_t start = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (start >= n_) break;
    const int64_t end = std::min(n_, start + chunk_);
    for (int64_t i = start; i < end; i++) (*fn_)(i, thread);
  }
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    run_items(index);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int)>& fn, int64_t chunk) {
  if (n <= 0) return;
  if (workers_.empty() || n <= chunk) {
    for (int64_t i = 0; i < n; i++) fn(i, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    chunk_ = std::max<int64_t>(1, chunk);
    next_.store(0, std::memory_order_relaxed);
    busy_ = int(workers_.size());
    generation_++;
  }
  wake_.notify_all();
  run_items(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return busy_ == 0; });
  fn_ = nullptr;
}

}  // namespace folio
