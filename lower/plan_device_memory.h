// Pass: device-memory planning. Workspace offsets for the temp tensors between kernels.
#pragma once

#include "lower/plan.h"

namespace weft {

// Program inputs and outputs live in user buffers; every temp tensor gets an offset in one
// workspace from its lifetime over kernel launches (best of first / best / worst fit), and
// workspace_bytes is the peak.
ProgramPlan plan_device_memory(const ProgramPlan& plan);

}  // namespace weft
