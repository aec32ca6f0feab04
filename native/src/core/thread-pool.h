// A fixed pool of worker threads that run parallel loops; threads are created once, not per operation.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace folio {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads counts the calling thread; 0 = hardware concurrency
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(i, thread) for every i in [0, n) and returns when all are done. Items are handed out in
  // chunks from a shared counter; `thread` is in [0, size()) and can index per-thread scratch space.
  void parallel_for(int64_t n, const std::function<void(int64_t i, int thread)>& fn, int64_t chunk = 1);

  static int default_threads();

 private:
  void worker(int index);
  void run_items(int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  int busy_ = 0;
  bool stop_ = false;
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
};

}  // namespace folio
