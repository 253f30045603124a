// Median-of-repetitions timing.
#include "runtime/timing.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace weft {

Timing time_runs(const std::function<void()>& fn, int warmup, int reps) {
  WEFT_CHECK(reps >= 1 && warmup >= 0, "bad timing parameters");
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return summarize_times(std::move(t));
}

Timing summarize_times(std::vector<double> t) {
  WEFT_CHECK(!t.empty(), "no times to summarize");
  std::sort(t.begin(), t.end());
  int reps = static_cast<int>(t.size());
  Timing r;
  r.reps = reps;
  r.min_s = t.front();
  r.max_s = t.back();
  r.median_s = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
  return r;
}

}  // namespace weft
