// The pass that rewrites composite operators (rms_norm, softmax) into primitive operators.
#pragma once

#include "ir/graph.h"

namespace weft {

// Returns `g` (a kernel graph) with every composite replaced by its primitives:
//   N = rms_norm(x, dim, eps): sqr(x) -> mean(dim) -> shift(offset=eps) (only if eps != 0)
//                              -> sqrt -> N = div(x, that)
//   N = softmax(x, dim):       exp(x) -> sum(dim) -> N = div(exp(x), that)
// The composite's result keeps its name; intermediates are named like flattened nested calls
// (`N.1`, `N.2`, ... in order), skipping any name the graph already uses. Other ops, nested bodies
// and source locations are kept. A graph without composites comes back unchanged.
Graph expand_composites(const Graph& g);

// One composite op of kernel graph `g` expanded on its own: a kernel graph whose inputs are the
// op's operands and whose outputs are its results, in order (the symbolic layers evaluate a
// composite through it).
Graph composite_expansion(const Graph& g, const Op& op);

}  // namespace weft
