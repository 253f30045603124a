// Counters and the stop signal (the search's budget and why it stopped) shared by all search
// threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "core/budget.h"
#include "core/error.h"

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

// The search's runner: its budget (time, states, memory) and the stop every search thread polls.
class StopSignal {
 public:
  explicit StopSignal(const Budget& budget) : budget_(budget) {}
  // Replaces the budget before the search starts, with one drawn from it (the same start):
  // optimize gives the search its share once it has timed a verification test
  // (driver/optimize.cpp).
  void set_budget(const Budget& budget) {
    WEFT_CHECK(budget.start() == budget_.start(), "a search budget drawn from another clock");
    budget_ = budget;
  }
  const Budget& budget() const { return budget_; }
  // Reads the clock: the block search calls this every 1024 states and `stopped()` otherwise.
  bool should_stop() {
    if (stopped()) return true;
    double now = elapsed_s();
    if (budget_.timed() && now > budget_.time_s()) stop(StopReason::time_budget);
    double deadline = level_deadline_s_.load(std::memory_order_relaxed);
    if (deadline > 0 && now > deadline) end_level_past(now);
    return stopped();
  }
  // Stops the search once `states` (the shared count) is past the state budget.
  void count_states(int64_t states) {
    if (budget_.states_exceeded(states)) stop(StopReason::state_budget);
  }
  // One level of the iterative deepening (kernel_search.cpp) starts now and ends at the end of
  // `level` (a draw from budget(): untimed for none) or when end_level() is called: from then on
  // stopped() is true, so every search running unwinds as for a stop, but the search as a whole
  // goes on with the next level.
  void start_level(const Budget& level) {
    WEFT_CHECK(level.start() == budget_.start(), "a level drawn from another clock");
    std::lock_guard<std::mutex> lock(level_mu_);
    level_started_s_ = elapsed_s();
    level_deadline_s_.store(level.time_s(), std::memory_order_relaxed);
    level_end_ = StopReason::complete;
    level_ended_.store(false, std::memory_order_relaxed);
  }
  // After the last level: stopped() is the search's own stop again.
  void end_levels() {
    std::lock_guard<std::mutex> lock(level_mu_);
    level_deadline_s_.store(0, std::memory_order_relaxed);
    level_end_ = StopReason::complete;
    level_ended_.store(false, std::memory_order_relaxed);
  }
  // Ends the current level early: `why` is time_budget (its share of the budget is spent) or
  // converged (no better candidate for a while). The first reason given sticks.
  void end_level(StopReason why) {
    std::lock_guard<std::mutex> lock(level_mu_);
    if (!level_ended_.load(std::memory_order_relaxed)) end_level_locked(why);
  }
  // Ends the current level if `now` is past its deadline, read again under the lock: a helper
  // thread may have read the previous level's deadline just before the next level started.
  void end_level_past(double now) {
    std::lock_guard<std::mutex> lock(level_mu_);
    double deadline = level_deadline_s_.load(std::memory_order_relaxed);
    if (level_ended_.load(std::memory_order_relaxed) || deadline <= 0 || now <= deadline) return;
    end_level_locked(StopReason::time_budget);
  }
  // Ends the current level as converged if nothing better was found (the last improvement at
  // `improved_s`) for `converge_s` since then and since the level's start, checked under the lock
  // for the same reason.
  void end_level_if_converged(double improved_s, double converge_s) {
    std::lock_guard<std::mutex> lock(level_mu_);
    if (level_ended_.load(std::memory_order_relaxed)) return;
    if (elapsed_s() - std::max(improved_s, level_started_s_) < converge_s) return;
    end_level_locked(StopReason::converged);
  }
  // Goes on with the current level if it has not ended, or ended only by converging (the
  // convergence clock then restarts); false if it is over (its time share spent, or the search
  // stopped).
  bool resume_converged_level() {
    std::lock_guard<std::mutex> lock(level_mu_);
    if (stopped_.load(std::memory_order_relaxed)) return false;
    if (!level_ended_.load(std::memory_order_relaxed)) return true;
    if (level_end_ != StopReason::converged) return false;
    level_end_ = StopReason::complete;
    level_ended_.store(false, std::memory_order_relaxed);
    level_started_s_ = elapsed_s();
    return true;
  }
  bool level_ended() const { return level_ended_.load(std::memory_order_relaxed); }
  // Why the level ended: complete when it ran out of work.
  StopReason level_end() const {
    std::lock_guard<std::mutex> lock(level_mu_);
    return level_ended_.load() ? level_end_ : StopReason::complete;
  }
  // The level has reached new ground (larger block graphs, kernel_search.cpp): convergence counts
  // from now, as from the level's start, since what it found so far says little about it.
  void restart_convergence_clock() {
    std::lock_guard<std::mutex> lock(level_mu_);
    level_started_s_ = elapsed_s();
  }
  void stop(StopReason r) {
    bool expected = false;
    if (stopped_.compare_exchange_strong(expected, true)) reason_ = r;
  }
  bool stopped() const {
    return stopped_.load(std::memory_order_relaxed) || level_ended_.load(std::memory_order_relaxed);
  }
  // Whether the search as a whole was stopped (a level ending is not a stop).
  bool search_stopped() const { return stopped_.load(std::memory_order_relaxed); }
  StopReason reason() const { return stopped_.load() ? reason_ : StopReason::complete; }
  // Seconds since the budget's start.
  double elapsed_s() const { return budget_.elapsed_s(); }

 private:
  // Ends the level for `why`; level_mu_ held.
  void end_level_locked(StopReason why) {
    level_end_ = why;
    level_ended_.store(true, std::memory_order_relaxed);
  }

  Budget budget_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> level_ended_{false};
  std::atomic<double> level_deadline_s_{0};
  mutable std::mutex level_mu_;  // guards the level's start and end reason
  double level_started_s_ = 0;
  StopReason level_end_ = StopReason::complete;
  StopReason reason_ = StopReason::complete;
};

}  // namespace weft
