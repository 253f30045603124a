// Library functions reachable with call_lib: each declared once with the table operator whose
// shape rule it follows and its CPU implementation.
#pragma once

#include <string_view>
#include <vector>

#include "ir/ops.h"
#include "model/model_ops.h"

namespace weft {

struct LibFunction {
  const char* name;   // "cpu.gemm"
  OpKind shape_like;  // deduction uses this operator's symbolic rule (and it takes no attributes)
  ModelEvalFn eval;
  const char* doc;
};

const std::vector<LibFunction>& all_lib_functions();
const LibFunction* lib_function_by_name(std::string_view name);

}  // namespace weft
