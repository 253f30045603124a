// The abstract semantics of operators (notes §2 table), from the operator table's symbolic facet:
// one function for the search's new tensors and for whole µGraphs.
#pragma once

#include <vector>

#include "absexpr/term.h"
#include "ir/graph.h"

namespace weft {

// The abstract expression of the result of an operator whose result is one term (elementwise,
// matmul, reductions, for-loop accumulators, selections), given its operands' terms `a` and `b`
// (kNoTerm when absent): `k` is the number of elements combined per result element
// (combined_elements) and `constant` the operator's rational attribute (0 when it has none).
TermId abstract_term(OpKind kind, TermId a, TermId b, int64_t k, const Rational& constant,
                     TermStore& store);

// The abstract expression of an elementwise operator's result by evaluating its Lax formula in
// full (abstract_term takes a shortcut for one-operation formulas; tests compare the two).
TermId abstract_formula_term(OpKind kind, TermId a, TermId b, const Rational& constant,
                             TermStore& store);

// Abstract expressions of one op's results, given those of its operands. `g` is the graph that
// holds `op` (its types give reduction sizes; a block graph's `loop` gives accumulator sizes).
// Graph-defined kernels and thread ops are inlined (their body evaluated on `inputs`); composites
// are expanded as ir/expand_composites.h does.
std::vector<TermId> abstract_op(const Graph& g, const Op& op, const std::vector<TermId>& inputs,
                                TermStore& store);

// The abstract expression of every value of `g`, indexed by ValueId. A kernel graph's inputs are
// variables named after the input values; a nested graph's inputs take `inputs` (one per input).
std::vector<TermId> abstract_values(const Graph& g, TermStore& store,
                                    const std::vector<TermId>& inputs = {});

// The abstract expressions of `g`'s outputs, in order.
std::vector<TermId> abstract_outputs(const Graph& g, TermStore& store);

}  // namespace weft
