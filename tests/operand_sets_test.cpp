// Tests of the kernel search's operand sets: every set once, the required values honoured, the
// order by size.
#include <gtest/gtest.h>

#include <set>

#include "search/operand_sets.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

TEST(OperandSets, EverySetOfAtMostTheLimitOnceSmallFirst) {
  std::vector<OperandSet> sets = operand_sets(4, 2, {}, false);
  ASSERT_EQ(sets.size(), 4u + 6u);  // C(4,1) + C(4,2)
  std::set<uint64_t> seen;
  for (size_t i = 0; i < sets.size(); ++i) {
    EXPECT_TRUE(seen.insert(sets[i].mask).second);
    EXPECT_EQ(sets[i].hi, 63 - __builtin_clzll(sets[i].mask));
    if (i > 0) {
      EXPECT_LE(__builtin_popcountll(sets[i - 1].mask), __builtin_popcountll(sets[i].mask));
    }
  }
  EXPECT_EQ(operand_values(sets.back().mask), (std::vector<int>{2, 3}));
}

TEST(OperandSets, LargeFirstReversesTheSizesOnly) {
  std::vector<OperandSet> sets = operand_sets(3, 3, {}, true);
  ASSERT_EQ(sets.size(), 7u);
  EXPECT_EQ(sets.front().mask, 0b111u);
  EXPECT_EQ(__builtin_popcountll(sets.back().mask), 1);
}

// A required mask: some value of it is in every set (a dead kernel result the last kernel must
// read; a kernel with two results offers two ways to read it).
TEST(OperandSets, EverySetReadsSomeValueOfEachRequiredMask) {
  const std::vector<uint64_t> required = {0b1000, 0b0110};
  std::vector<OperandSet> sets = operand_sets(4, 4, required, false);
  ASSERT_FALSE(sets.empty());
  for (const OperandSet& s : sets)
    for (uint64_t r : required) EXPECT_NE(s.mask & r, 0u) << s.mask;
  // {3, 1}, {3, 2}, {3, 1, 2}, {3, 0, 1}, {3, 0, 2}, {3, 0, 1, 2}
  EXPECT_EQ(sets.size(), 6u);
  EXPECT_EQ(sets.front().mask, 0b1010u);
}

}  // namespace
}  // namespace weft
