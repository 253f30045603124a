// One decode step (or any GPU plan) three ways, timed on the same inputs: the plan's kernels
// launched one by one, the same launches captured as a CUDA graph, and the persistent kernel;
// with the bytes of weights one step reads and, on a GPU, the measured copy bandwidth that makes
// them a floor (issue 17's acceptance figures).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "mpk/runtime/megakernel_program.h"
#include "mpk/runtime/per_kernel_decode.h"
#include "runtime/program.h"

namespace weft {

struct MegakernelBenchOptions {
  int warmup = 3, reps = 20;
  // A second persistent-kernel figure: this many iterations in one launch, per iteration (the
  // launch's own cost spread out); 0 or 1: not measured.
  uint64_t iterations_per_launch = 16;
};

struct MegakernelBench {
  Timing per_kernel;                         // Program::time of the per-kernel program
  std::optional<Timing> cuda_graph;          // cuda backend only
  Timing persistent;                         // one launch per step
  std::optional<Timing> persistent_batched;  // per iteration, iterations_per_launch per launch
  uint64_t batched_iterations = 0;
  int64_t weight_bytes = 0;
  std::optional<double> bandwidth_bytes_per_s;  // GPU only: measure_copy_bandwidth
  // weight_bytes / bandwidth: the step's floor, when the bandwidth was measured.
  std::optional<double> floor_s() const;
};

// Bytes of the plan's inputs a step reads as weights: for a program declaring a decode interface
// every input but the step's state (the token's embedding, the mask, the rotary tables and the KV
// caches: mpk/decode_interface.h), for another program every input.
int64_t step_weight_bytes(const ProgramPlan& plan);

// Times `per_kernel` (the same plan, cuda or cuda-emulation backend) and `mk` on `inputs`.
// Emulated programs give host times, which the caller must not report as GPU times.
MegakernelBench bench_megakernel(const MegakernelProgram& mk, const Program& per_kernel,
                                 const std::vector<std::vector<float>>& inputs,
                                 const MegakernelBenchOptions& options);

// The decode loop with its state on the device (`resident`, built with decode_on_device): one
// untimed decode of `tokens` tokens, then `reps` decodes of `tokens` tokens at `per_launch` tokens
// per launch; each decode's launches' time (host wall time of launch and wait, nothing copied to
// the device, the newest token id back) over its tokens. Weights and state are placed before each
// decode, outside the time.
Timing bench_resident_decode(const MegakernelProgram& resident, int tokens, int per_launch,
                             int reps);

// The per-kernel decode loop on the device, timed as bench_resident_decode: one untimed decode,
// then `reps` decodes of `tokens` tokens, each decode's per-token time: of the launched steps, or
// with `cuda_graph` (GPU only) of the graph replays (every step after the first).
Timing bench_per_kernel_decode(const PerKernelDecoder& decoder, int tokens, bool cuda_graph,
                               int reps);

}  // namespace weft
