// Checking rules: finite-field identity testing of one rule (both sides instantiated at chosen
// sizes and compared by the equivalence verifier, verify/; uninterpreted operators as seeded
// random functions), and a list of rules tested and proved in parallel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/rational.h"
#include "rewrite/prove.h"
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

// What the two checks say of one rule; a check not asked for keeps its default (error /
// not proven).
struct RuleVerdict {
  RuleCheck check;
  ProofResult proof;
};

// Whether `rule` still holds when each of its constants that is a power of 2, 2^k, is read as
// base^k (rewrite/model_match.h's generalized matches): the rule so rewritten, checked by finite
// field at rule_check_sizes().
bool rule_holds_with_base(const Rule& rule, const Rational& base, uint64_t seed = 1);

// rule_holds_with_base, each (rule, base) checked once.
class BaseVerdicts {
 public:
  bool holds(const Rule& rule, const Rational& base, uint64_t seed);

 private:
  std::map<std::tuple<int, int64_t, int64_t>, bool> known_;
};

// Checks each rule by finite field at rule_check_sizes() (`check`) and proves it from the axioms
// (`prove`; a rule that failed its check is not proved), each rule on its own, on `threads`
// threads (0: the cores), verdicts in rule order. `progress` (may be empty) hears a line every
// 500 rules.
std::vector<RuleVerdict> check_and_prove(const std::vector<Rule>& rules, bool check, bool prove,
                                         uint64_t seed, int threads,
                                         const std::function<void(const std::string&)>& progress);

}  // namespace weft
