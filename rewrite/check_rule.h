// Finite-field identity testing of a rule: both sides instantiated at chosen sizes and compared
// by the equivalence verifier (verify/), uninterpreted operators as seeded random functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rewrite/rule.h"
#include "verify/equivalence.h"

namespace weft {

// The fresh sizes rules are checked at, two instantiations (none used by the enumeration).
const std::vector<std::vector<int64_t>>& rule_check_sizes();

struct RuleCheck {
  Verdict verdict = Verdict::error;
  int log2_bound = 0;   // equivalent: the worst bound over the instantiations
  std::string message;  // otherwise: what differed, and at which sizes
};

// Checks `rule` at each instantiation of `sizes` (per rule variable, see instantiation()).
RuleCheck check_rule_finite_field(const Rule& rule, const std::vector<std::vector<int64_t>>& sizes,
                                  uint64_t seed = 1);

}  // namespace weft
