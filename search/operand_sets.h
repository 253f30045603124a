// The operand sets a graph-defined kernel of the kernel search is tried over, in the order they
// are tried.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace weft {

// One operand set: `mask` has bit v set for each value v it reads; `hi` is its highest value (the
// kernel's canonical key starts with it).
struct OperandSet {
  int hi = 0;
  uint64_t mask = 0;
  friend bool operator==(const OperandSet&, const OperandSet&) = default;
};

// Every set of 1..max_operands of the first `values` values (at most 64), each containing at
// least one value of every mask in `required`, smaller sets first, or larger ones first when
// `large_first`; sets of one size in increasing (hi, mask) order.
std::vector<OperandSet> operand_sets(int values, int max_operands,
                                     const std::vector<uint64_t>& required, bool large_first);

// The values of a set, in increasing order.
std::vector<int> operand_values(uint64_t mask);

}  // namespace weft
