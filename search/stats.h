// Counters and the stop signal shared by all search threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace weft {

struct SearchStats {
  std::atomic<int64_t> states{0};            // partial graphs visited
  std::atomic<int64_t> pruned_expr{0};       // rejected by the abstract-expression oracle
  std::atomic<int64_t> pruned_bound{0};      // rejected: too many open values for the ops left
  std::atomic<int64_t> block_graphs{0};      // complete block graphs emitted
  std::atomic<int64_t> candidates{0};        // complete µGraphs equivalent by abstract expression
  std::atomic<int64_t> split_candidates{0};  // of which split-reduction variants
  // Levels of the iterative deepening (kernel graph sizes): reached, and ended early because
  // their share of the time budget was spent or because the best stopped improving.
  std::atomic<int> levels_reached{0};
  std::atomic<int> levels_cut{0};
  std::atomic<int> levels_converged{0};
};

// Why a search stopped. `complete`: the space is exhausted; `converged`: the best candidate had
// not improved for SearchConfig::converge_s (docs/search.md, "Anytime search").
enum class SearchStop {
  complete,
  converged,
  time_budget,
  state_budget,
  memory_budget,
  interrupted
};
inline const char* search_stop_name(SearchStop r) {
  switch (r) {
    case SearchStop::complete:
      return "complete";
    case SearchStop::converged:
      return "converged";
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
  // Sets the budget before the search starts (optimize gives the search its share of the run's
  // budget once it has timed a verification test: driver/optimize.cpp).
  void set_time_budget(double time_budget_s) { budget_s_ = time_budget_s; }
  // Reads the clock: the block search calls this every 1024 states and `stopped()` otherwise.
  bool should_stop() {
    if (stopped()) return true;
    double now = elapsed_s();
    if (budget_s_ > 0 && now > budget_s_) stop(SearchStop::time_budget);
    double deadline = level_deadline_s_.load(std::memory_order_relaxed);
    if (deadline > 0 && now > deadline) end_level(SearchStop::time_budget);
    return stopped();
  }
  // One level of the iterative deepening (kernel_search.cpp) starts now and ends at `deadline_s`
  // (seconds since the start; 0: none) or when end_level() is called: from then on stopped() is
  // true, so every search running unwinds as for a stop, but the search as a whole goes on with
  // the next level.
  void start_level(double deadline_s) {
    std::lock_guard<std::mutex> lock(level_mu_);
    level_started_s_ = elapsed_s();
    level_deadline_s_.store(deadline_s, std::memory_order_relaxed);
    level_end_ = SearchStop::complete;
    level_ended_.store(false, std::memory_order_relaxed);
  }
  // Ends the current level early: `why` is time_budget (its share of the budget is spent) or
  // converged (no better candidate for a while). The first reason given sticks.
  void end_level(SearchStop why) {
    std::lock_guard<std::mutex> lock(level_mu_);
    if (level_ended_.load(std::memory_order_relaxed)) return;
    level_end_ = why;
    level_ended_.store(true, std::memory_order_relaxed);
  }
  bool level_ended() const { return level_ended_.load(std::memory_order_relaxed); }
  // Why the level ended: complete when it ran out of work.
  SearchStop level_end() const {
    std::lock_guard<std::mutex> lock(level_mu_);
    return level_ended_.load() ? level_end_ : SearchStop::complete;
  }
  double level_started_s() const {
    std::lock_guard<std::mutex> lock(level_mu_);
    return level_started_s_;
  }
  void stop(SearchStop r) {
    bool expected = false;
    if (stopped_.compare_exchange_strong(expected, true)) reason_ = r;
  }
  bool stopped() const {
    return stopped_.load(std::memory_order_relaxed) || level_ended_.load(std::memory_order_relaxed);
  }
  // Whether the search as a whole was stopped (a level ending is not a stop).
  bool search_stopped() const { return stopped_.load(std::memory_order_relaxed); }
  SearchStop reason() const { return stopped_.load() ? reason_ : SearchStop::complete; }
  double elapsed_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
  double budget_s_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> level_ended_{false};
  std::atomic<double> level_deadline_s_{0};
  mutable std::mutex level_mu_;  // guards the level's start and end reason
  double level_started_s_ = 0;
  SearchStop level_end_ = SearchStop::complete;
  SearchStop reason_ = SearchStop::complete;
};

}  // namespace weft
