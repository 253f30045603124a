// A minimal parallel loop over an index range on std::threads. weft uses it (rather than a task
// library) where ThreadSanitizer must see every synchronization: TSan cannot see inside an
// uninstrumented oneTBB, so races there would be either missed or reported falsely.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace weft {

// Asked once: the library asks per call (a convolution's threads), and the answer reads the
// process's CPU affinity each time.
inline int hardware_threads() {
  static const int threads = [] {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
  }();
  return threads;
}

// Calls fn(i) for every i in [0, n) on up to `threads` threads (0: all cores), handing out indices
// dynamically. The first exception thrown by fn is rethrown here after all threads finish.
template <class Fn>
void parallel_for_index(int64_t n, int threads, Fn&& fn) {
  if (threads <= 0) threads = hardware_threads();
  int workers = static_cast<int>(std::min<int64_t>(threads, n));
  if (workers <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&] {
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        next.store(n);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace weft
