// The search's sketches made into IR: a sketched operator's attributes and a block sketch as a
// block graph (where a sum and its scale by 1/(elements per group) stay together, one mean).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "search/block_search.h"

namespace weft {

// The attributes of a sketched operator: `dim` and `to` of reductions, the constant (an index
// into the program's factors or offsets) of scale and shift.
Attrs sketch_op_attrs(OpKind kind, int dim, int constant, int64_t to,
                      const SearchConstants& constants);

// The block graph of `sketch` over operands of these types and names, its saves named
// `out_names`. The search builds a mean as a sum and a scale so that a fused graph may split the
// two; where they stay together (the sum's one use is that scale, in the same stage, scaling by
// 1/(elements per group)) the graph holds one mean, as the rule-built kernels write it and as the
// cost model and code generation price it.
Graph materialize_block(const BlockSketch& sketch, const std::vector<TensorType>& operand_types,
                        const std::vector<std::string>& operand_names,
                        const std::vector<std::string>& out_names, const SearchConstants& constants,
                        int64_t threads);

}  // namespace weft
