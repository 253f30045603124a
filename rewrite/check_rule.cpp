// Finite-field check of a rule at fresh sizes, reusing the µGraph equivalence verifier.
#include "rewrite/check_rule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace weft {

const std::vector<std::vector<int64_t>>& rule_check_sizes() {
  static const std::vector<std::vector<int64_t>> sizes = {{5, 7, 11, 4}, {6, 4, 9, 5}};
  return sizes;
}

RuleCheck check_rule_finite_field(const Rule& rule, const std::vector<std::vector<int64_t>>& sizes,
                                  uint64_t seed) {
  RuleCheck out;
  out.verdict = Verdict::equivalent;
  out.log2_bound = -1000;
  for (const std::vector<int64_t>& s : sizes) {
    const std::map<std::string, int64_t> at = instantiation(rule, s);
    std::string where;
    for (const auto& [var, size] : at)
      where += fmt::format("{}{}={}", where.empty() ? "" : ", ", var, size);
    Graph source, target;
    try {
      source = instantiate(rule, false, at);
      target = instantiate(rule, true, at);
    } catch (const UserError& e) {
      return RuleCheck{
          Verdict::error, 0,
          fmt::format("rule {} does not type-check at {}: {}", rule.id, where, e.message())};
    }
    VerifyOptions options;
    options.seed = seed;
    options.threads = 1;
    options.float_check = false;
    const VerifyResult r = EquivalenceChecker(source, options).check(target);
    if (r.verdict != Verdict::equivalent) {
      out.verdict = r.verdict;
      out.message = r.verdict == Verdict::not_equivalent
                        ? fmt::format("rule {}: output {} differs at {}", rule.id, r.output, where)
                        : fmt::format("rule {} at {}: {}", rule.id, where, r.message);
      return out;
    }
    const int b = r.bound <= 0 ? -1000 : static_cast<int>(std::floor(std::log2(r.bound)));
    out.log2_bound = std::max(out.log2_bound, b);
  }
  return out;
}

}  // namespace weft
