// The schedules a graph-defined kernel can take for given operands: grid, imaps, for-loop range,
// fmaps and iterator stages, all derived from the operands' shapes (every divisor within limits).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/target.h"
#include "ir/ops.h"
#include "search/config.h"
#include "search/dim_classes.h"

namespace weft {

struct IterChoice {
  std::array<int8_t, 3> imap = {-1, -1, -1};
  int8_t fmap = -1;
  bool post = false;  // loaded once after the loop (fmap must be -1)
  friend bool operator==(const IterChoice&, const IterChoice&) = default;
};

struct BlockSchedule {
  std::array<int64_t, 3> grid = {1, 1, 1};
  int64_t loop = 1;
  std::vector<IterChoice> iters;  // one per kernel operand, in operand order
  friend bool operator==(const BlockSchedule&, const BlockSchedule&) = default;
};

// The block-level tile each operand's iterator yields under `s`.
TensorType iter_tile_type(const TensorType& operand, const IterChoice& c, const BlockSchedule& s);

// The factors f by which `s`'s for-loop may be spread over f times as many blocks (the
// split-reduction step, search/split_reduction.h): f divides the loop, at least two iterations stay
// per block, the grid stays within config.max_blocks; none when the loop is shorter than 4 or no
// grid dim is free to take the split.
std::vector<int64_t> loop_split_factors(const BlockSchedule& s, const SearchConfig& config);

// Axis rules for schedules (see dim_classes.h); without `classes` none apply.
struct ScheduleRules {
  const DimClasses* classes = nullptr;
  std::vector<DimClassList> operand_classes;  // per operand
  bool final_mode = false;  // the kernel produces program outputs: grid dims cut output axes
  bool sum_accumulators_only = true;  // then an fmap may only walk a reduced axis
};

// The axis class each grid dim cuts (kAnyClass when unknown or unused).
std::array<int8_t, 3> grid_classes(const BlockSchedule& s, const ScheduleRules& rules);

// Every schedule for `operands` within the configuration's limits, in a deterministic order
// (cheapest estimated device-memory traffic first). Rules applied, all documented in
// docs/search.md: each used grid dim cuts at least one operand (else all blocks along it compute
// the same tile); with loop > 1 at least one operand has an fmap (else every iteration is the
// same); with loop == 1 every iterator is post-stage (a loop of one needs no accumulators);
// the iterators' tiles fit in shared memory; and the axis rules: a grid dim cuts one axis class
// (two grid dims, two classes), in final mode an output axis that is not reduced (or, if reduced,
// carried by an operand every block loads whole along it: a global statistic), and an fmap walks
// a reduced axis when only summing accumulators are allowed.
std::vector<BlockSchedule> enumerate_schedules(const std::vector<TensorType>& operands,
                                               const SearchConfig& config, const Target& target,
                                               const ScheduleRules& rules = {});

}  // namespace weft
