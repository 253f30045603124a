// One side of a rewrite rule as a pattern over a model function: the rule's inputs (their dims
// the rule's variables), its operators in order with their operands, and its outputs.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/attrs.h"
#include "ir/ops.h"
#include "rewrite/rule.h"

namespace weft {

// A value of a pattern: rule input `index`, or result `result` of pattern op `index`.
struct PatternRef {
  bool input = false;
  int index = 0;
  int result = 0;
  friend bool operator==(const PatternRef&, const PatternRef&) = default;
};

struct PatternOp {
  OpKind kind = OpKind::add;
  Attrs attrs;  // completed with defaults, dims non-negative at the rule's rank
  std::vector<PatternRef> operands;
  std::vector<int> result_ranks;
};

struct Pattern {
  std::vector<std::vector<std::string>> input_dims;  // per rule input, a variable per dim
  std::vector<PatternOp> ops;                        // a topological order
  std::vector<PatternRef> outputs;
  // How many ops of each operator the pattern has (a function with fewer cannot match it).
  std::vector<std::pair<OpKind, size_t>> kind_counts;
  int rank(const PatternRef& r) const;
};

// The side `target_side` of `rule` (read at rule_reading_sizes()).
Pattern rule_pattern(const Rule& rule, bool target_side);

// A rule read one way: matches of `from` are replaced by `to`.
struct RuleDirection {
  int rule = 0;
  const Rule* source = nullptr;  // the rule it reads (owned by the caller's list)
  bool reverse = false;          // target -> source
  Pattern from, to;
};
// A direction of a rule applied to a model function.
struct RewriteStep {
  int rule = 0;
  bool reverse = false;  // target -> source
  std::string at;        // the first value the rewrite replaced (or made)
};

// Both directions of each rule, except a side with no operators as `from` (nothing to find).
std::vector<RuleDirection> rule_directions(const std::vector<Rule>& rules);

// Whether a table attribute names an axis of the operand (`dim`): it moves when a rule is applied
// to tensors with more leading dims than the rule's inputs.
bool axis_attribute(const std::string& name);

}  // namespace weft
