// Driver: one kernel plan for a whole model function at a binding, built from a device executor's
// trace of it (exec/device_trace.h): each µGraph launch contributes its plan's kernels, each model
// kernel launch one library kernel that runs the same device kernel's body on the same buffers
// (a `call` step with the family's argument struct, lower/plan.h's device-kernel calls), and the
// result is copied into the plan's outputs. The plan is what the mega-kernel compiles into one
// task graph and one persistent kernel (driver/mpk_program.h, docs/mpk.md "Whole models").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "exec/device_trace.h"
#include "exec/device_vm.h"
#include "lower/plan.h"

namespace weft {

struct NamedDeviceTensor {
  std::string name;
  DeviceTensor tensor;
};

// The plan of the traced run: `inputs` are the run's tensor arguments (the plan's inputs, in
// order), `outputs` its result tensors (copied into the plan's outputs of those names). Every
// other buffer of the trace gets its own bytes of the workspace. UserError when an operator ran
// on the host (the trace's host fallbacks, named with their counts).
ProgramPlan megakernel_plan_from_trace(const DeviceTrace& trace,
                                       const std::vector<NamedDeviceTensor>& inputs,
                                       const std::vector<NamedDeviceTensor>& outputs,
                                       const std::string& name, const std::string& target);

}  // namespace weft
