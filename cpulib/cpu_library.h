// The CPU library operators (issue 30): convolution and matmul run by oneDNN in f32 where weft
// was built with it, for the VM's per-operator path. Each call takes the VM's f64 operands,
// computes in f32 (the precision the VM stores every f32 result in) and returns f64.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/attrs.h"
#include "ir/ops.h"

namespace weft {

// "oneDNN 2.6.3": the library the operators run on; empty when weft was built without one.
std::string cpu_library_name();

// At most `threads` threads per library call from now on (0, the default: the cores). A call
// uses fewer where its work is small.
void limit_cpu_library_threads(int threads);

// `kind` applied to `in` with evaluated attributes `attrs` by the CPU library, or nullopt when
// the library does not take this call (built without one, an operator or attribute it does not
// implement, a shape it refuses): the caller then computes it itself. Operands are checked by
// the caller's shape rules first; the result has the operator's shape.
std::optional<Tensor<double>> run_on_cpu_library(OpKind kind,
                                                 const std::vector<const Tensor<double>*>& in,
                                                 const Attrs& attrs);

}  // namespace weft
