// Applying a match: the matched bindings replaced by the other side of the rule, its operators
// deduced at the model's symbolic shapes (a condition the prover cannot show means the rewrite is
// not applied), the block reordered so every value is defined before it is read (a rewrite that
// would need a cycle is not applied).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

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

// Equal types, dims equal as the prover shows them.
bool same_model_type(const MType& a, const MType& b, SymProver& prover);

// A rule's attributes on a model call: axes moved by `lift` leading dims, powers of 2 read as
// powers of `base`; nullopt when a constant overflows.
std::optional<MAttrs> lifted_attrs(const Attrs& attrs, int lift,
                                   const std::optional<Rational>& base);

// A block's bindings in an order where each is defined before it is read, as close to `priority`
// (one per binding, smaller first) as that allows; nullopt for a cycle.
std::optional<std::vector<Binding>> dependency_order(std::vector<Binding> bindings,
                                                     const std::vector<int>& priority);

// Renames `earlier` then `now`, as one map: what `earlier` renamed to a value `now` renames
// follows it on.
std::map<std::string, std::string> compose_renames(std::map<std::string, std::string> earlier,
                                                   const std::map<std::string, std::string>& now);

// Reads of `from` become reads of `to` in `b` (the arms of an if included).
void rename_reads(Binding& b, const std::map<std::string, std::string>& renamed);

}  // namespace weft
