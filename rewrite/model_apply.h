// Applying a match: the matched bindings replaced by the other side of the rule, its operators
// deduced at the model's symbolic shapes (a condition the prover cannot show means the rewrite is
// not applied), the block reordered so every value is defined before it is read (a rewrite that
// would need a cycle is not applied).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "model/module.h"
#include "rewrite/model_match.h"

namespace weft {

struct AppliedRewrite {
  Function function;
  // Values of the match whose readers now read another value (a side that returns its input).
  std::map<std::string, std::string> renamed;
};

// `f` with match `m` (of one side of a rule, found with `index`) replaced by `replacement` (the
// other side). Nullopt when the replacement does not deduce to the matched outputs' types
// without conditions, or would make the block cyclic. `fresh` numbers the new values.
std::optional<AppliedRewrite> apply_match(const Function& f, const FunctionIndex& index,
                                          const RewriteMatch& m, const Pattern& replacement,
                                          SymProver& prover, int& fresh);

// Reads of `from` become reads of `to` in `b` (the arms of an if included).
void rename_reads(Binding& b, const std::map<std::string, std::string>& renamed);

}  // namespace weft
