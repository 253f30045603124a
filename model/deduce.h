// Forward shape deduction at the model level: the symbolic shape rule of every operator the
// module may call (table operators, model operators, µGraphs, library functions, functions),
// and the module pass that deduces every binding's type and every symbolic variable's definition.
#pragma once

#include <string>
#include <vector>

#include "ir/deduce_context.h"
#include "ir/ops.h"
#include "model/module.h"

namespace weft {

// The tensor operands' types, checked to be tensors.
void require_tensors(DeduceContext& ctx, const std::vector<MType>& in, const std::string& callee);

// Checks `attrs` against `specs` (names, kinds; integer and list values may be symbolic) and
// fills in defaults. `op` names the operator in messages.
void complete_model_attrs(DeduceContext& ctx, const std::vector<AttrSpec>& specs, const char* op,
                          MAttrs& attrs);

// The symbolic shape rule of table operator `kind` (model-level operators only) on operand
// types; completes `attrs`. The row's rule where it has one (the µGraph rows and the elementwise
// model-only rows: the same rule as the µGraph layers' InferFn), else its model_impl()'s.
MType deduce_table_op(DeduceContext& ctx, OpKind kind, const std::vector<MType>& in, MAttrs& attrs);
// A row's own symbolic shape rule (OpInfo::shape) on operand types, attributes completed.
MType deduce_by_row_rule(DeduceContext& ctx, const OpInfo& info, const std::vector<MType>& in,
                         MAttrs& attrs);

// Deduces every binding's type in `module` in order, fills the runtime checks, and checks
// well-formedness: names defined once and before use, symbolic variables defined (at a bare
// dim of a parameter or a match_cast) before any other use, call arities, attributes and
// operand types, no match_cast in dataflow blocks, and each function's result against its
// declared return type. Throws the first violation as a located UserError.
void deduce_module(Module& module, SymProver& prover);

// Re-runs deduction on a copy and throws unless the types it deduces equal the ones `module`
// holds: the well-formedness check that runs after every pass.
void check_module(const Module& module, SymProver& prover);

}  // namespace weft
