// CPU backend, code generation: a kernel plan to one C++ translation unit.
#pragma once

#include <string>

#include "lower/plan.h"

namespace weft {

// The generated unit starts with the support code (codegen/cpu/support/weft_cpu.h, embedded at
// build time) and defines
//   extern "C" void weft_main(const weft_rt* rt, const float* const* inputs,
//                             float* const* outputs, float* workspace);
// with inputs / outputs in the plan's order (row-major f32), a workspace of plan.workspace_bytes
// and weft_rt from codegen/cpu/support/weft_rt.h. Each graph-defined kernel K's block graph is a
// set of functions of the block's coordinates and its arena (K_begin, K_iteration, K_end,
// K_block; docs/lowering.md); the kernel itself runs the grid as tasks of rt->parallel_for, each
// task block_group blocks in lock-step. Library kernels are loops (parallel over their outer dim)
// or cblas_sgemm for matmul. The unit also defines
//   extern "C" void weft_run_task(const weft_rt* rt, float* const* T, int64_t kernel,
//                                 int64_t bx, int64_t by, int64_t bz, float* arena);
// for the task-graph runtime (mpk/): block (bx, by, bz) of graph-defined kernel number `kernel`
// (K_block over `arena`, at least K_smem_bytes), or library kernel `kernel` whole; T is the
// table of device tensors in plan order, as weft_main builds it. The plan must be fully lowered for
// a CPU target (every buffer f32, offsets, register tiles and block groups assigned); the code
// depends on the plan alone.
std::string emit_cpu_source(const ProgramPlan& plan);

}  // namespace weft
