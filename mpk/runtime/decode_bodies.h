// The decode loop's task bodies (mpk/device/decode_bodies.cuh) beside the plan's: the options both
// the persistent kernel and the per-kernel decode loop (mpk/runtime/per_kernel_decode.h) emit the
// plan's bodies with, and the text that runs the decode operators (mpk/decode_layout.h).
#pragma once

#include <cstdint>
#include <string>

#include "codegen/cuda/emit_task_bodies.h"
#include "lower/plan.h"

namespace weft {

// The function the plan's task bodies call for kernel indices past the plan's
// (TaskBodyOptions::extra_task_function), and the shared memory its bodies need.
inline constexpr const char* kDecodeTaskFunction = "weft_mpk_decode_task";
int64_t decode_bodies_smem_bytes(int worker_threads);

// `bodies` with the decode bodies added (extra_task_function, their shared memory at the resolved
// worker size, and as read-only tensors the inputs no decode task writes), so both paths run the
// same body code.
TaskBodyOptions with_decode_bodies(const ProgramPlan& plan, TaskBodyOptions bodies);

// Text defining kDecodeTaskFunction: the bodies of decode_bodies.cuh with the plan's tensors and
// sizes, for a unit whose plan bodies (emit_cuda_task_bodies) precede it.
std::string emit_decode_task_bodies(const ProgramPlan& plan);

}  // namespace weft
