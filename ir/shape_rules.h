// The operator table's shape rules: each written once, as a template over a dimension algebra
// (ir/dim_algebra.h), and instantiated for concrete dims (µGraphs; the model executors at run
// time) and symbolic ones (model functions). Rows point at these (ir/ops.cpp, ir/ops_model.cpp).
#pragma once

#include "ir/ops.h"

namespace weft::shape_rules {

// The operand's shape (unary rows; accum_sum, accum_max).
extern const ShapeRule same_shape;
// Two operands of one rank and dtype whose size-1 dims broadcast (binary rows).
extern const ShapeRule broadcast;
// [..., m, k] x [..., k, n] -> [..., m, n], batch dims broadcast.
extern const ShapeRule matmul;
// Dim `dim` to size `to`, which divides it (sum, mean, max).
extern const ShapeRule reduction;
extern const ShapeRule reshape;
extern const ShapeRule concat;
extern const ShapeRule split;  // a tuple of its parts in model functions
extern const ShapeRule repeat;
// The shape kept; `dim` normalized and `eps` >= 0 (rms_norm, softmax).
extern const ShapeRule normalizing;
// Block graphs only (no model function calls them): the iterator, the saver, accum_concat.
extern const ShapeRule iter;
extern const ShapeRule save;
extern const ShapeRule accum_concat;
// Model-only elementwise rows: operands of one rank whose size-1 dims broadcast, the first one's
// dtype (the default of a model-only row with `real`); where (the values' dtype), cast (the
// target's dtype), clip (min <= max), predicate (comparisons, logical operators, is_nan,
// is_inf: bool; a comparison's two operands of one dtype).
extern const ShapeRule elementwise;
extern const ShapeRule predicate;
extern const ShapeRule where;
extern const ShapeRule cast;
extern const ShapeRule clip;

}  // namespace weft::shape_rules
