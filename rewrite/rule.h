// A graph rewrite rule (TASO's substitution): two kernel-level programs over the same inputs whose
// dims are variables, with how the rule was checked. Text form in docs/rewrites.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rational.h"
#include "ir/graph.h"

namespace weft {

// How far a rule is known to hold. `finite_field`: identity testing on random inputs at shapes
// drawn for it, with the chance that a false rule passes at most 2^log2_bound; `proven`: derived
// from the operator axioms by Z3 (shape-free, so it also holds at every instantiation).
enum class RuleStatus { unverified, finite_field, proven };
const char* rule_status_name(RuleStatus status);

struct RuleInput {
  std::string name;
  std::vector<std::string> dims;  // one variable name per dim
  friend bool operator==(const RuleInput&, const RuleInput&) = default;
};

struct Rule {
  int id = 0;
  RuleStatus status = RuleStatus::unverified;
  int log2_bound = 0;      // finite_field only
  std::string provenance;  // "generated:3" (by `weft rules generate` at that depth), "hand"
  std::vector<RuleInput> inputs;
  // Canonical .weft statement lines of each side (as print_graph writes them, without types),
  // then one `output NAME` line per output. Output i of the source equals output i of the target.
  std::vector<std::string> source;
  std::vector<std::string> target;
  friend bool operator==(const Rule&, const Rule&) = default;
};

// The dim variables in order of first appearance in the inputs.
std::vector<std::string> rule_variables(const Rule& rule);

// Sizes for a rule's variables: the i-th variable takes sizes[i % sizes.size()] (never 1: a
// size-1 dim broadcasts, which would let a rule hold only by accident).
std::map<std::string, int64_t> instantiation(const Rule& rule, const std::vector<int64_t>& sizes);

// Sizes a rule is read and type-checked at where any sizes its shapes allow will do (parsing,
// the prover's reading of its statements): distinct odd primes, so a split of a bare variable
// fails here as it would at some instantiation.
const std::vector<int64_t>& rule_reading_sizes();

// One side as a kernel-level program at the given variable sizes: inputs in rule order (every
// input, used by the side or not), then the statements. Throws UserError when the sizes do not
// type-check (a split of an odd size).
Graph instantiate(const Rule& rule, bool target_side, const std::map<std::string, int64_t>& sizes);

// The rule file text: a header comment, then each rule; parse_rules(print_rules(r)) == r.
std::string print_rules(const std::vector<Rule>& rules, std::string_view header = {});
// Parses a rule file. Every mistake is a UserError at `filename`:line:col; each side is
// type-checked at one instantiation and its statements normalized to the canonical text.
std::vector<Rule> parse_rules(std::string_view text, const std::string& filename);

// k when `r` is 2^k (the generator's constants are powers of 2), else nullopt.
std::optional<int> power_of_two(const Rational& r);
// `p` with each power of 2, 2^k, read as base^k; nullopt on overflow. `p` itself when it is no
// power of 2 or `base` is nullopt.
std::optional<Rational> rule_base_pow(const Rational& p, const std::optional<Rational>& base);

// The statement lines of a kernel program's canonical text (no program/input lines, no type
// comments): how a side is stored.
std::vector<std::string> side_lines(const Graph& program);

}  // namespace weft
