// CPU backend, code generation: a kernel plan to one C++ translation unit.
#pragma once

#include <string>

#include "lower/plan.h"

namespace weft {

// The generated unit defines
//   extern "C" void weft_main(const weft_rt* rt, const float* const* inputs,
//                             float* const* outputs, float* workspace);
// with inputs / outputs in the plan's order (row-major f32) and a workspace of
// plan.workspace_bytes. Blocks of a graph-defined kernel are tasks of rt->parallel_for; each task
// runs the block's for-loop over a private arena laid out by the shared-memory plan. Library
// kernels are loops (parallel over their outer dim) or cblas_sgemm for matmul.
// The plan must be fully lowered for a CPU target (every buffer f32, offsets assigned).
std::string emit_cpu_source(const ProgramPlan& plan);

// The C++ declaration of weft_rt shared by the generated code and the runtime.
const char* cpu_runtime_abi();

}  // namespace weft
