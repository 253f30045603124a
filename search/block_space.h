// The schedules a graph-defined kernel can take for given operands: grid, imaps, for-loop range,
// fmaps and iterator stages, all derived from the operands' shapes (every divisor within limits).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/target.h"
#include "ir/ops.h"
#include "search/config.h"

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

// Every schedule for `operands` within the configuration's limits, in a deterministic order
// (cheapest estimated device-memory traffic first). Rules applied, all documented in
// docs/search.md: each used grid dim cuts at least one operand (else all blocks along it compute
// the same tile); with loop > 1 at least one operand has an fmap (else every iteration is the
// same); with loop == 1 every iterator is post-stage (a loop of one needs no accumulators);
// the iterators' tiles fit in shared memory.
std::vector<BlockSchedule> enumerate_schedules(const std::vector<TensorType>& operands,
                                               const SearchConfig& config, const Target& target);

}  // namespace weft
