// Token-by-token decoding of a decoder step program (examples/tiny_decoder_step.weft's interface)
// through the host task-graph runtime, or through the program's kernels one after another.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "lower/plan.h"
#include "mpk/encode.h"
#include "mpk/host_runtime.h"

namespace weft {

// The step program's interface: inputs X [1, D] (the current token's embedding), M [1, 1, T] (1
// where the KV cache holds a position), Kc<l> [H, dh, T] and Vc<l> [H, T, dh] (layer l's cache);
// outputs LOGITS [1, V], KN<l> and VN<l> [1, H dh] (the current token's key and value). Every
// other input is a weight, filled with seeded uniform values scaled by 1/sqrt(rows); the
// embedding table [V, D] is held on the host. Throws UserError when the plan does not follow it.
struct DecodeOptions {
  int tokens = 8;  // decoded tokens, at most T
  int first_token = 1;
  uint64_t seed = 1;
};

struct DecodeResult {
  std::vector<int> tokens;                 // the first token, then one per step
  std::vector<std::vector<float>> logits;  // per step
  HostRunResult run;                       // the runtime's (sequential: ok, its time)
};

// Decodes through the task graph `graph` of `plan`.
DecodeResult decode_on_host(const ProgramPlan& plan, const CpuProgram& program,
                            const DeviceGraph& graph, const DecodeOptions& options,
                            HostRunOptions run_options);
// Decodes running the program's kernels one after another each step.
DecodeResult decode_sequential(const ProgramPlan& plan, const CpuProgram& program,
                               const DecodeOptions& options);

// Names of the graph-defined kernels that load a tensor whose name starts with `prefix` (the
// attention kernels, reading Kc: the data-dependent operators of a decode step).
std::set<std::string> kernels_reading(const ProgramPlan& plan, const std::string& prefix);

}  // namespace weft
