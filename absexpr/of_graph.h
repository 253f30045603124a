// The abstract expression of every tensor of a µGraph (notes §2 table), via the operator table.
#pragma once

#include <vector>

#include "absexpr/term.h"
#include "ir/graph.h"

namespace weft {

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
