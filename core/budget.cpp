// Budgets: the clock, the draws and the stop reasons' order.
#include "core/budget.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace weft {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::complete:
      return "complete";
    case StopReason::converged:
      return "converged";
    case StopReason::time_budget:
      return "time budget";
    case StopReason::state_budget:
      return "state budget";
    case StopReason::memory_budget:
      return "memory budget";
    case StopReason::interrupted:
      return "interrupted";
  }
  return "?";
}

StopReason worse_stop(StopReason a, StopReason b) {
  return static_cast<int>(a) >= static_cast<int>(b) ? a : b;
}

Budget::Budget() : Budget(Limits{}) {}

Budget::Budget(const Limits& limits) : start_(Clock::now()), limits_(limits) {}

double Budget::elapsed_s() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

double Budget::left_s() const {
  return timed() ? limits_.time_s - elapsed_s() : std::numeric_limits<double>::infinity();
}

Budget::Clock::time_point Budget::deadline() const {
  // Past about 30 years a deadline is none (and the conversion below cannot overflow).
  constexpr double kForever_s = 1e9;
  if (!timed() || limits_.time_s > kForever_s) return Clock::time_point::max();
  return start_ +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.time_s));
}

Budget Budget::with_time(double time_s) const {
  Limits limits = limits_;
  limits.time_s = timed() ? time_s : 0;
  return Budget(start_, limits);
}

Budget Budget::share(int ways, double floor_s) const {
  WEFT_CHECK(ways > 0, "a budget shared {} ways", ways);
  Budget now(Clock::now(), limits_);
  if (!timed()) return now;
  now.limits_.time_s = std::max(floor_s, left_s() / ways);
  return now;
}

Budget Budget::less(double reserve_s, double floor_s) const {
  return with_time(std::max(limits_.time_s - reserve_s, floor_s));
}

Budget Budget::until(int part, int parts, double from_s) const {
  WEFT_CHECK(part >= 0 && part <= parts && parts > 0, "slice {} of {} of a budget", part, parts);
  from_s = std::clamp(from_s, 0.0, limits_.time_s);
  return with_time(from_s + (limits_.time_s - from_s) * part / parts);
}

Budget Budget::scaled(double fraction) const {
  return with_time(limits_.time_s * fraction);
}

Budget Budget::extended(double late_s) const {
  return with_time(limits_.time_s + late_s);
}

}  // namespace weft
