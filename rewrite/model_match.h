// Finding a rule side in a model function (TASO's pattern match): each pattern operator mapped to
// a binding of one block with the same operator and attributes, operands consistent, the rule's
// variables bound to dims the prover shows consistent, and no intermediate value read outside the
// match; operators on integer or bool tensors never match (rules hold over the reals). A rule
// over [n, m] inputs also matches tensors with more leading dims (the same number
// for every value of the match: each leading index is one instance of the rule), axes shifted.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/rational.h"
#include "model/module.h"
#include "rewrite/pattern.h"
#include "sym/prove.h"

namespace weft {

// Where a function's values are defined and read: what matching and rewriting look up.
struct FunctionIndex {
  struct Site {
    int block = -1;  // -1: a parameter
    int binding = -1;
  };
  // Looked up, never iterated: hashed for the matcher's inner loop.
  std::unordered_map<std::string, Site> defined;
  // The top-level bindings reading each value (an if reads what its arms read), in order.
  std::unordered_map<std::string, std::vector<Site>> readers;
  // item bindings of each tuple value: index -> item values.
  std::unordered_map<std::string, std::map<int64_t, std::vector<std::string>>> items;
  // Table-operator bindings of each operator, in program order.
  std::map<OpKind, std::vector<Site>> by_kind;
  // The operator of each block's bindings (-1: not a table operator), by block and binding.
  std::vector<std::vector<int>> kind;
  // The rank of each tensor value with known dims (others absent).
  std::unordered_map<std::string, int> rank;
  std::map<std::string, MType> types;
  std::string result;
};
FunctionIndex index_function(const Function& f);

struct RewriteMatch {
  int block = 0;
  int lift = 0;                     // leading dims beyond the rule's
  std::vector<std::string> inputs;  // the model value of each rule input
  std::vector<int> ops;             // the binding of each pattern op
  std::vector<int> items;           // item bindings of multi-result pattern ops
  // The rule's constants are powers of 2 (the generator's one constant): a match may take them as
  // powers of another constant, `base` (scale by 1/2 twice = scale by 1/4). Nullopt: as written.
  // Whether the rule still holds with that base is for the caller to check
  // (rule_holds_with_base, rewrite/check_rule.h).
  std::optional<Rational> base;
  // The model value of each pattern output ("" for an unread result of a multi-result op).
  std::vector<std::string> outputs;
};

// Whether a call's attributes are pattern op `po`'s at `lift` leading dims more than the rule's
// (`first_rank`: its first operand's rank, for negative axes). The rule's powers of 2 may read as
// powers of `base`: set by the first such attribute, checked by the others.
bool attrs_match_pattern(const PatternOp& po, const MAttrs& attrs, int first_rank, int lift,
                         std::optional<Rational>& base, const SourceLoc& loc);

// Whether the model types bound to a pattern's inputs (`types[i]`: input i's, null when unbound)
// give each rule variable one dim, equal where the prover shows it, `lift` leading dims skipped.
bool rule_dims_consistent(const Pattern& p, const std::vector<const MType*>& types, int lift,
                          SymProver& prover);

// Every match of `pattern` in `f`, in a deterministic order.
std::vector<RewriteMatch> find_matches(const Function& f, const FunctionIndex& index,
                                       const Pattern& pattern, SymProver& prover);

}  // namespace weft
