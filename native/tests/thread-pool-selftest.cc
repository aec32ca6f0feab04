// Self-test of the thread pool: every item of every loop runs exactly once, on a thread index in range;
// run_on_all runs each thread's item once; parallel_ranges covers [0, n) exactly once with ranges no
// longer than the step (one worker made slow now and then, so that the others steal from its range); loops back to back
// (workers spinning), after pauses longer than the spin time (workers asleep), from pools of 1 to 5 threads (more
// threads than cores included), with item counts below, at and above the chunk size. Exit status 1 on any failure.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "core/thread-pool.h"

using folio::ThreadPool;

int main() {
  int failures = 0;
  long loops = 0;
  std::mt19937 rng(7);
  for (int threads = 1; threads <= 5; ++threads) {
    ThreadPool pool(threads);
    if (pool.size() != threads) {
      std::printf("FAIL size %d != %d\n", pool.size(), threads);
      ++failures;
    }
    std::vector<std::atomic<int>> hits(4096);
    for (int round = 0; round < 3000; ++round) {
      const int64_t n = int64_t(rng() % 300);
      const int64_t chunk = 1 + int64_t(rng() % 8);
      for (int64_t i = 0; i < n; ++i) hits[size_t(i)].store(0);
      std::atomic<bool> bad_thread{false};
      pool.parallel_for(
          n,
          [&](int64_t i, int t) {
            hits[size_t(i)].fetch_add(1);
            if (t < 0 || t >= threads) bad_thread = true;
          },
          chunk);
      ++loops;
      for (int64_t i = 0; i < n; ++i) {
        if (hits[size_t(i)].load() != 1) {
          if (++failures <= 20)
            std::printf("FAIL threads=%d n=%lld item %lld ran %d times\n", threads, (long long)n, (long long)i,
                        hits[size_t(i)].load());
        }
      }
      if (bad_thread) {
        ++failures;
        std::printf("FAIL threads=%d: thread index out of range\n", threads);
      }
      if (round % 7 == 0) {
        std::vector<std::atomic<int>> each(static_cast<size_t>(threads));
        pool.run_on_all([&](int t, int nt) {
          if (nt != threads || t < 0 || t >= nt) bad_thread = true;
          else each[size_t(t)].fetch_add(1);
        });
        ++loops;
        for (int t = 0; t < threads; ++t) {
          if (each[size_t(t)].load() != 1) {
            ++failures;
            std::printf("FAIL run_on_all threads=%d: thread %d ran %d times\n", threads, t, each[size_t(t)].load());
          }
        }
      }
      {
        const int64_t rn = int64_t(rng() % 4000), step = 1 + int64_t(rng() % 50);
        const bool slow = round % 5 == 0;  // thread 1 sleeps in its ranges: the others take them over
        for (int64_t i = 0; i < rn; ++i) hits[size_t(i)].store(0);
        std::atomic<bool> bad{false};
        pool.parallel_ranges(rn, step, [&](int64_t b, int64_t e, int t) {
          if (t < 0 || t >= threads || b < 0 || e > rn || b >= e || e - b > step) bad = true;
          for (int64_t i = b; i < e && i < rn && i >= 0; ++i) hits[size_t(i)].fetch_add(1);
          if (slow && t == 1) std::this_thread::sleep_for(std::chrono::microseconds(20));
        });
        ++loops;
        for (int64_t i = 0; i < rn; ++i) {
          if (hits[size_t(i)].load() != 1 && ++failures <= 20)
            std::printf("FAIL parallel_ranges threads=%d n=%lld step=%lld: item %lld ran %d times\n", threads,
                        (long long)rn, (long long)step, (long long)i, hits[size_t(i)].load());
        }
        if (bad) {
          ++failures;
          std::printf("FAIL parallel_ranges threads=%d n=%lld step=%lld: a range out of bounds or too long\n", threads,
                      (long long)rn, (long long)step);
        }
      }
      // Now and then a pause long enough for the workers to go to sleep.
      if (round % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  std::printf("thread pool self-test: %ld loops, %d failures\n", loops, failures);
  return failures ? 1 : 0;
}
