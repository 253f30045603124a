// Counters and the stop signal shared by all search threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace weft {

struct SearchStats {
  std::atomic<int64_t> states{0};            // partial graphs visited
  std::atomic<int64_t> pruned_expr{0};       // rejected by the abstract-expression oracle
  std::atomic<int64_t> pruned_bound{0};      // rejected: too many open values for the ops left
  std::atomic<int64_t> block_graphs{0};      // complete block graphs emitted
  std::atomic<int64_t> candidates{0};        // complete µGraphs equivalent by abstract expression
  std::atomic<int64_t> split_candidates{0};  // of which split-reduction variants
};

// Why a search stopped.
enum class SearchStop { completed, time_budget, state_budget, memory_budget, interrupted };
inline const char* search_stop_name(SearchStop r) {
  switch (r) {
    case SearchStop::completed:
      return "completed";
    case SearchStop::time_budget:
      return "time budget";
    case SearchStop::state_budget:
      return "state budget";
    case SearchStop::memory_budget:
      return "memory budget";
    case SearchStop::interrupted:
      return "interrupted";
  }
  return "?";
}

class StopSignal {
 public:
  explicit StopSignal(double time_budget_s)
      : start_(std::chrono::steady_clock::now()), budget_s_(time_budget_s) {}
  // Reads the clock: the block search calls this every 1024 states and `stopped()` otherwise.
  bool should_stop() {
    if (stopped_.load(std::memory_order_relaxed)) return true;
    if (budget_s_ > 0 && elapsed_s() > budget_s_) stop(SearchStop::time_budget);
    return stopped_.load(std::memory_order_relaxed);
  }
  void stop(SearchStop r) {
    bool expected = false;
    if (stopped_.compare_exchange_strong(expected, true)) reason_ = r;
  }
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }
  SearchStop reason() const { return stopped_.load() ? reason_ : SearchStop::completed; }
  double elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
  double budget_s_;
  std::atomic<bool> stopped_{false};
  SearchStop reason_ = SearchStop::completed;
};

}  // namespace weft
