// Rewrite-rule patterns over abstract expressions: the s-expression form with ?variables.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absexpr/term.h"

namespace weft {

// One pattern node. A term variable (`?x`) matches any e-class; a size variable (`?i`, in the
// size position of sum/max) matches any size and must agree wherever it repeats.
struct PatNode {
  bool is_var = false;
  int var = -1;  // term variable index when is_var
  TermOp op = TermOp::var;
  int64_t k = 0;       // literal size of sum/max (when k_var < 0); fn: the operator
  int k_var = -1;      // size variable index, or -1
  int a = -1, b = -1;  // operand pattern nodes
};

struct Pattern {
  std::vector<PatNode> nodes;
  int root = -1;
};

// Variables are shared between the two sides of a rule, so both are parsed together.
struct PatternPair {
  Pattern lhs, rhs;
  int num_vars = 0;
  int num_size_vars = 0;
};

// Parses "(add ?x ?y)" and "(add ?y ?x)". Input variables (bare names) are not allowed in rules;
// `(const)` is. Throws InternalError on a malformed rule (rules are written by us, not users), and
// when the right side uses a variable the left side does not bind.
PatternPair parse_rule_patterns(std::string_view lhs, std::string_view rhs);

}  // namespace weft
