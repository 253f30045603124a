// The budget object (core/budget.h): its draws never outlast their parent but for their floors,
// untimed budgets give untimed draws, and the stop reasons' names and order.
#include "core/budget.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "core/error.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

TEST(Budget, AnUntimedBudgetHasNoDeadlineAndItsDrawsNone) {
  const Budget none;
  EXPECT_FALSE(none.timed());
  EXPECT_TRUE(std::isinf(none.left_s()));
  EXPECT_EQ(none.deadline(), Budget::Clock::time_point::max());
  for (const Budget& draw : {none.share(3, 0.5), none.less(1, 0.1), none.until(1, 4),
                             none.scaled(0.5), none.extended(2)})
    EXPECT_FALSE(draw.timed());
}

TEST(Budget, DrawsKeepTheStartAndEndNoLaterThanTheParent) {
  const Budget parent({.time_s = 100, .states = 7, .memory_bytes = 1 << 20});
  const Budget less = parent.less(30, 1e-3);
  EXPECT_EQ(less.start(), parent.start());
  EXPECT_DOUBLE_EQ(less.time_s(), 70);
  EXPECT_DOUBLE_EQ(parent.until(2, 5).time_s(), 40);
  EXPECT_DOUBLE_EQ(parent.until(5, 5).time_s(), 100);
  // Slices of the time after a point (stages that begin late): 50 s in, 2 of 5 slices end at 70.
  EXPECT_DOUBLE_EQ(parent.until(2, 5, 50).time_s(), 70);
  EXPECT_DOUBLE_EQ(parent.until(5, 5, 50).time_s(), 100);
  EXPECT_DOUBLE_EQ(parent.until(1, 2, 150).time_s(), 100);  // past the end: the end
  EXPECT_DOUBLE_EQ(parent.scaled(0.97).time_s(), 97);
  EXPECT_LE(less.deadline(), parent.deadline());
  EXPECT_LE(parent.until(2, 5).deadline(), parent.deadline());
  // The state and memory limits are per search, not shared out.
  EXPECT_EQ(less.limits().states, 7);
  EXPECT_EQ(parent.share(4, 0).limits().memory_bytes, 1 << 20);
}

TEST(Budget, FloorsKeepALateStageAToken) {
  const Budget parent({.time_s = 1});
  EXPECT_DOUBLE_EQ(parent.less(5, 0.25).time_s(), 0.25);
  const Budget spent({.time_s = 1e-6});
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_LT(spent.left_s(), 0);
  EXPECT_DOUBLE_EQ(spent.share(3, 0.05).time_s(), 0.05);
}

TEST(Budget, AShareIsAnEqualPartOfWhatIsLeftStartingNow) {
  const Budget parent({.time_s = 90});
  const Budget third = parent.share(3, 0.01);
  EXPECT_GE(third.start(), parent.start());
  EXPECT_LE(third.time_s(), 30);
  EXPECT_GT(third.time_s(), 29);
  EXPECT_LE(third.deadline(), parent.deadline());
  EXPECT_THROW(parent.share(0, 0.01), InternalError);
}

TEST(Budget, AnExtendedBudgetEndsLaterByWhatWasLate) {
  const Budget parent({.time_s = 10});
  const Budget late = parent.extended(2.5);
  EXPECT_DOUBLE_EQ(late.time_s(), 12.5);
  EXPECT_EQ(
      late.deadline() - parent.deadline(),
      std::chrono::duration_cast<Budget::Clock::duration>(std::chrono::duration<double>(2.5)));
}

TEST(Budget, LimitsOfStatesAndMemory) {
  const Budget b({.states = 10, .memory_bytes = 100});
  EXPECT_FALSE(b.states_exceeded(10));
  EXPECT_TRUE(b.states_exceeded(11));
  EXPECT_FALSE(b.memory_exceeded(100));
  EXPECT_TRUE(b.memory_exceeded(101));
  const Budget unlimited;
  EXPECT_FALSE(unlimited.states_exceeded(int64_t{1} << 60));
  EXPECT_FALSE(unlimited.memory_exceeded(int64_t{1} << 60));
}

TEST(StopReason, NamesAreTheOnesSummaryJsonUses) {
  EXPECT_STREQ(stop_reason_name(StopReason::complete), "complete");
  EXPECT_STREQ(stop_reason_name(StopReason::converged), "converged");
  EXPECT_STREQ(stop_reason_name(StopReason::time_budget), "time budget");
  EXPECT_STREQ(stop_reason_name(StopReason::state_budget), "state budget");
  EXPECT_STREQ(stop_reason_name(StopReason::memory_budget), "memory budget");
  EXPECT_STREQ(stop_reason_name(StopReason::interrupted), "interrupted");
}

TEST(StopReason, ARunInPartsReportsItsWorstStop) {
  EXPECT_EQ(worse_stop(StopReason::complete, StopReason::converged), StopReason::converged);
  EXPECT_EQ(worse_stop(StopReason::time_budget, StopReason::converged), StopReason::time_budget);
  EXPECT_EQ(worse_stop(StopReason::interrupted, StopReason::memory_budget),
            StopReason::interrupted);
  EXPECT_EQ(worse_stop(StopReason::complete, StopReason::complete), StopReason::complete);
}

}  // namespace
}  // namespace weft
