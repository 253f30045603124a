// Token-by-token decoding of a decode-step program (mpk/decode_interface.h) with the decode loop's
// work on the host between steps (the host hooks: the token's embedding, the rotary tables, the
// mask, the KV-cache append and the greedy argmax), through the host task-graph runtime, the
// program's kernels one after another, or any step function (a persistent kernel's launch, the
// per-kernel path). The references the device decode loops are checked against; tests, benchmarks
// and the CLI link it, the library does not.
#pragma once

#include <functional>
#include <vector>

#include "lower/plan.h"
#include "mpk/encode.h"
#include "mpk/runtime/decode_data.h"
#include "mpk/runtime/host_runtime.h"

namespace weft {

// Decodes through the task graph `graph` of `plan`.
DecodeResult decode_on_host(const ProgramPlan& plan, const CpuProgram& program,
                            const DeviceGraph& graph, const DecodeOptions& options,
                            HostRunOptions run_options);
// Decodes running the program's kernels one after another each step.
DecodeResult decode_sequential(const ProgramPlan& plan, const CpuProgram& program,
                               const DecodeOptions& options);

// One decode step: the step program's inputs (plan input order, f32) in, its outputs out.
using DecodeStep =
    std::function<std::vector<std::vector<float>>(const std::vector<std::vector<float>>&)>;
// Decodes calling `step` once per token (a persistent kernel's launch, or the per-kernel path's
// run of a GPU plan), with the same host hooks between steps; run.seconds is the steps' time.
DecodeResult decode_with(const ProgramPlan& plan, const DecodeOptions& options,
                         const DecodeStep& step);

}  // namespace weft
