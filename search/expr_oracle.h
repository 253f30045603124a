// What the search needs from abstract expressions: build a term per new tensor, ask the pruning
// questions. Implemented over absexpr/ by AbsExprOracle; tests may use simpler stand-ins.
#pragma once

#include <cstdint>
#include <string>

#include "ir/ops.h"

namespace weft {

using TermRef = uint32_t;

class ExprOracle {
 public:
  virtual ~ExprOracle() = default;
  // Term of kernel-graph input `index` of the input program.
  virtual TermRef input_term(int index) = 0;
  // Term of an operator's result. `a` (and `b` for binary ops) are operand terms; `k` is the
  // number of elements a reduction adds up (sum/mean/max: group size, matmul: the contraction
  // size, accum_sum/accum_max: the loop range), `constant` the scale factor or shift offset.
  virtual TermRef op_term(OpKind kind, TermRef a, TermRef b, int64_t k,
                          const Rational& constant) = 0;
  // Is `t` a subexpression of some term A_eq-equivalent to one of the program's outputs?
  virtual bool viable(TermRef t) = 0;
  // Is `t` A_eq-equivalent to the program's output `output`?
  virtual bool equivalent(TermRef t, int output) = 0;
  // Printable form, and back: checkpoints store terms as text since ids depend on timing.
  virtual std::string text(TermRef t) const = 0;
  virtual TermRef parse(const std::string& text) = 0;
  // Estimated bytes of the terms made so far and their cached answers (the part that grows with
  // the search; search/memory_account.h). Stand-ins that hold little may leave it at 0.
  virtual int64_t memory_bytes() const { return 0; }
};

}  // namespace weft
