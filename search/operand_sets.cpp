// The operand sets a graph-defined kernel of the kernel search is tried over, in the order they
// are tried.
#include "search/operand_sets.h"

#include <algorithm>

#include "core/error.h"

namespace weft {

std::vector<OperandSet> operand_sets(int values, int max_operands,
                                     const std::vector<uint64_t>& required, bool large_first) {
  WEFT_CHECK(values >= 0 && values <= 64, "{} values do not fit an operand mask", values);
  std::vector<OperandSet> sets;
  for (int hi = 0; hi < values; ++hi)
    for (uint64_t rest = 0; rest < (uint64_t{1} << hi); ++rest) {
      const uint64_t mask = rest | uint64_t{1} << hi;
      if (__builtin_popcountll(mask) > max_operands) continue;
      if (std::all_of(required.begin(), required.end(), [mask](uint64_t r) { return mask & r; }))
        sets.push_back(OperandSet{hi, mask});
    }
  std::stable_sort(sets.begin(), sets.end(), [large_first](const auto& a, const auto& b) {
    int pa = __builtin_popcountll(a.mask), pb = __builtin_popcountll(b.mask);
    return large_first ? pa > pb : pa < pb;
  });
  return sets;
}

std::vector<int> operand_values(uint64_t mask) {
  std::vector<int> values;
  for (int v = 0; v < 64; ++v)
    if (mask >> v & 1) values.push_back(v);
  return values;
}

}  // namespace weft
