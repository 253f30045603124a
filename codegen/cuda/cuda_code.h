// Pieces of generated CUDA text that the emitters share: C types, float literals, the identity
// and combination of reductions, an elementwise step's scalar form, operands (a pointer with
// shape, strides and swizzle) and references to their elements, and who runs an element loop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "lower/plan.h"

namespace weft::cuda_emit {

// The C++ type generated code stores a dtype's elements as (float, weft_f16, weft_bf16).
const char* ctype(DType d);
// The dtype code weft_gemm takes (prelude).
int gemm_code(DType d);
// `v` as an f32 literal ("0.5f", "2.0f").
std::string flit(double v);

// Reductions and accumulators: the identity and the combination of a partial {0} with {1}.
struct CombineForm {
  OpKind op;
  const char* identity;
  const char* combine;
};
const CombineForm& combine_form(OpKind op);
std::string combine(OpKind op, const std::string& acc, const std::string& v);

// An elementwise step's scalar form in f32 registers: the op table's CUDA pattern over the
// operands and the operator's rational attribute.
std::string scalar_expr(const Step& s, const std::vector<std::string>& a);

// `e` parenthesized unless it is one token of letters, digits and underscores (a name or a number).
std::string paren(const std::string& e);

// A tensor in generated code: a typed pointer expression with shape, element strides, swizzle.
struct Operand {
  std::string ptr;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<int64_t> strides;
  int64_t swizzle_row_bytes = 0;  // a swizzled buffer: its rows' bytes (weft_swz); 0: not swizzled
  bool wide = false;              // device tensor: 64-bit offsets
};

// The element of `o` at per-dim indices of a loop shape of the same rank (size-1 dims of `o`
// broadcast), and its value in f32.
std::string ref(const Operand& o, const std::vector<std::string>& idx);
std::string load(const Operand& o, const std::vector<std::string>& idx);

// Who runs an element loop: every thread of a block, or every thread of a grid (library).
struct Workers {
  std::string first;  // this thread's first unit
  std::string step;   // number of threads
  const char* itype;  // index type
};

}  // namespace weft::cuda_emit
