// The last resort of sym/ proofs: an exact encoding of a normal form in Z3's integer arithmetic
// (floordiv and mod through quotient/remainder variables, variables' bounds and positive divisors
// as assumptions), decided under a deterministic resource limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sym/evaluate.h"
#include "sym/expr.h"

namespace weft {

struct SymZ3Options {
  // Z3's deterministic resource limit per query (its "rlimit" units): the real budget, so the
  // same query always gets the same answer. A few thousand units decide linear queries.
  uint64_t rlimit = 2'000'000;
  // A wall-clock limit in milliseconds (0: none): only a safety net, far above what the
  // resource limit allows, against a Z3 procedure that loops without counting its work (Z3's
  // default arithmetic solver does on floordiv(s * s + 1, 3) == floordiv(s * s, 3); the legacy
  // solver used here does not). When it fires the answer is unknown.
  unsigned timeout_ms = 10'000;
};

enum class SymZ3Verdict { holds, fails, unknown };

struct SymZ3Answer {
  SymZ3Verdict verdict = SymZ3Verdict::unknown;
  std::optional<SymBinding> model;  // fails: Z3's binding of the variables (when it fits int64)
  std::string reason;               // unknown: why (resource limit, Z3's own reason)
};

// Whether `d == 0` (equality) or `d >= 0` (!equality) holds at every binding of the variables
// (of d and of `defined`) within their bounds at which every divisor is positive: those of d and
// of `defined` (the caller passes the divisors of expressions that cancelled out of d).
SymZ3Answer z3_decide(const SymExpr& d, bool equality, const std::vector<SymExpr>& defined,
                      const SymZ3Options& options);

}  // namespace weft
