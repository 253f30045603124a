// The search's stop signal (search/stats.h): levels end by their deadline or by converging, a
// converged level may go on with its next part, and a stale deadline never ends a new level.
#include <gtest/gtest.h>

#include "search/stats.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

TEST(StopSignal, AConvergedLevelResumesOneOutOfTimeDoesNot) {
  const Budget budget({.time_s = 1000});
  StopSignal stop(budget);
  stop.start_level(budget.until(1, 2));
  EXPECT_TRUE(stop.resume_converged_level()) << "a level still running goes on";
  stop.end_level(StopReason::converged);
  EXPECT_TRUE(stop.stopped());
  EXPECT_TRUE(stop.resume_converged_level());
  EXPECT_FALSE(stop.stopped());
  EXPECT_EQ(stop.level_end(), StopReason::complete);
  stop.end_level(StopReason::time_budget);
  EXPECT_FALSE(stop.resume_converged_level());
  EXPECT_TRUE(stop.stopped());
  stop.start_level(budget.until(2, 2));
  stop.end_level(StopReason::converged);
  stop.stop(StopReason::interrupted);
  EXPECT_FALSE(stop.resume_converged_level()) << "the search as a whole stopped";
}

TEST(StopSignal, APassedDeadlineEndsOnlyTheLevelItBelongsTo) {
  const Budget budget({.time_s = 1000});
  StopSignal stop(budget);
  stop.start_level(budget.until(1, 1000000));  // a deadline of 1 ms
  while (stop.elapsed_s() <= 0.001) {
  }
  const double now = stop.elapsed_s();
  stop.start_level(budget.until(2, 2));  // the next level starts before the stale check lands
  stop.end_level_past(now);
  EXPECT_FALSE(stop.level_ended());
  stop.end_level_past(budget.time_s() + 1);
  EXPECT_TRUE(stop.level_ended());
  EXPECT_EQ(stop.level_end(), StopReason::time_budget);
}

TEST(StopSignal, ConvergenceCountsFromTheLevelStartAndTheLastImprovement) {
  const Budget budget({.time_s = 1000});
  StopSignal stop(budget);
  stop.start_level(budget.until(1, 2));
  stop.end_level_if_converged(0, 100);
  EXPECT_FALSE(stop.level_ended()) << "100 s have not passed";
  stop.end_level_if_converged(-200, 0);
  EXPECT_TRUE(stop.level_ended());
  EXPECT_EQ(stop.level_end(), StopReason::converged);
}

}  // namespace
}  // namespace weft
