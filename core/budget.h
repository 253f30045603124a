// One budget of time, states and memory for a run, and the sub-budgets its stages draw from it;
// the reason a run stopped. Every split of a time budget is one of the draws below, so each stage's
// share is written once and no stage can outlast the budget it was drawn from.
#pragma once

#include <chrono>
#include <cstdint>

namespace weft {

// Why a run stopped. `complete`: nothing was left to do; `converged`: the best result had stopped
// improving (the anytime search, docs/search.md); `interrupted`: the caller asked it to stop.
enum class StopReason {
  complete,
  converged,
  time_budget,
  state_budget,
  memory_budget,
  interrupted
};

// "complete", "converged", "time budget", "state budget", "memory budget", "interrupted": the
// words summary.json and the progress lines use.
const char* stop_reason_name(StopReason reason);

// Which of two stop reasons describes a run made of both (a run in parts, a model's regions):
// the later one in the order above.
StopReason worse_stop(StopReason a, StopReason b);

// A budget: from its start, at most `time_s` seconds, `states` states and `memory_bytes` bytes
// (each 0: unlimited). A value: copies are independent, and a draw is a new budget whose time ends
// no later than its parent's (but for the floors below, which keep a late stage a token search
// rather than none: a search given 0 seconds would run unlimited). Draws keep the parent's state
// and memory limits, which are per search, not shared out.
class Budget {
 public:
  using Clock = std::chrono::steady_clock;

  struct Limits {
    double time_s = 0;
    int64_t states = 0;
    int64_t memory_bytes = 0;
  };

  // Start now; without limits, or with these.
  Budget();
  explicit Budget(const Limits& limits);

  const Limits& limits() const { return limits_; }
  bool timed() const { return limits_.time_s > 0; }
  double time_s() const { return limits_.time_s; }
  Clock::time_point start() const { return start_; }
  double elapsed_s() const;
  // Seconds until the deadline (negative past it); +infinity without a time limit.
  double left_s() const;
  // The deadline; Clock::time_point::max() without a time limit.
  Clock::time_point deadline() const;
  bool states_exceeded(int64_t states) const {
    return limits_.states > 0 && states > limits_.states;
  }
  bool memory_exceeded(int64_t bytes) const {
    return limits_.memory_bytes > 0 && bytes > limits_.memory_bytes;
  }

  // --- Draws (an untimed budget gives untimed draws) ---
  // An equal share of the time left among `ways` stages still to run, starting now: time one
  // stage leaves unused goes to those after it. At least `floor_s`.
  Budget share(int ways, double floor_s) const;
  // The same start, ending `reserve_s` earlier (kept for a later stage), after at least `floor_s`.
  Budget less(double reserve_s, double floor_s) const;
  // The same start, ending at `part` of `parts` equal slices of the time after `from_s` (seconds
  // from the start: where the stages begin): a stage that ends early leaves its time to the next
  // slice.
  Budget until(int part, int parts, double from_s = 0) const;
  // The same start, ending `fraction` of the way to the deadline (a margin kept unplanned).
  Budget scaled(double fraction) const;
  // The same start, ending `late_s` later: a stage after one that overran keeps its whole share.
  Budget extended(double late_s) const;

 private:
  Budget(Clock::time_point start, const Limits& limits) : start_(start), limits_(limits) {}
  Budget with_time(double time_s) const;

  Clock::time_point start_;
  Limits limits_;
};

}  // namespace weft
