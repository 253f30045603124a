// Forward shape deduction at the model level: the symbolic shape rule of every operator the
// module may call (table operators, model operators, µGraphs, library functions, functions),
// and the module pass that deduces every binding's type and every symbolic variable's definition.
#pragma once

#include <string>
#include <vector>

#include "ir/ops.h"
#include "model/module.h"

namespace weft {

// What a shape rule needs: the prover, where the call is, and where to put the conditions it can
// neither prove nor refute (they become run-time checks of the binding).
class DeduceContext {
 public:
  DeduceContext(SymProver& prover, SourceLoc loc, std::vector<SymCondition>* runtime_checks)
      : prover_(prover), loc_(std::move(loc)), checks_(runtime_checks) {}

  // a == b for the call to be valid: proven: nothing; refuted: a UserError naming `what` and a
  // binding where they differ; unknown: a run-time check.
  void require_eq(const SymExpr& a, const SymExpr& b, const std::string& what);
  // a <= b, likewise.
  void require_le(const SymExpr& a, const SymExpr& b, const std::string& what);
  // True only when a == b is proven (no check recorded).
  bool provably_eq(const SymExpr& a, const SymExpr& b);
  [[noreturn]] void fail(const std::string& message) const;
  const SourceLoc& loc() const { return loc_; }
  SymProver& prover() { return prover_; }

 private:
  void require(SymRel rel, const SymExpr& a, const SymExpr& b, const std::string& what);
  SymProver& prover_;
  SourceLoc loc_;
  std::vector<SymCondition>* checks_;
};

// A dim attribute (possibly negative) normalized against `rank`; throws at the call otherwise.
int64_t normalize_dim(DeduceContext& ctx, const SymExpr& dim, int rank, const char* name);
// Dim i of a broadcast of two operands: equal dims, or one of them the constant 1 (otherwise
// their equality is required).
SymExpr broadcast_dim(DeduceContext& ctx, const SymExpr& a, const SymExpr& b, size_t i);
// The tensor operands' types, checked to be tensors.
void require_tensors(DeduceContext& ctx, const std::vector<MType>& in, const std::string& callee);

// Checks `attrs` against `specs` (names, kinds; integer and list values may be symbolic) and
// fills in defaults. `op` names the operator in messages.
void complete_model_attrs(DeduceContext& ctx, const std::vector<AttrSpec>& specs, const char* op,
                          MAttrs& attrs);

// The symbolic shape rule of table operator `kind` (model-level operators only) on operand
// types; completes `attrs`. A model-only operator's rule is its model_impl()'s; the others' agrees
// with the table's InferFn at every binding (tested).
MType deduce_table_op(DeduceContext& ctx, OpKind kind, const std::vector<MType>& in, MAttrs& attrs);

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
