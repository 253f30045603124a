// Timing of compiled programs: warm-up runs, then repetitions, reporting the median.
#pragma once

#include <functional>
#include <vector>

namespace weft {

struct Timing {
  double median_s = 0, min_s = 0, max_s = 0;
  int reps = 0;
};

// Runs `fn` `warmup` times untimed, then `reps` times timed with a steady clock.
Timing time_runs(const std::function<void()>& fn, int warmup, int reps);
// Median, min and max of measured times (seconds); at least one.
Timing summarize_times(std::vector<double> times_s);

}  // namespace weft
