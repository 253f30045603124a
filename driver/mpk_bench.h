// Driver: the persistent kernel's benchmarks as library calls (docs/mpk.md): a program's step
// timed three ways against its weight-bandwidth floor, with a decode-step program's whole decodes
// per token, and the empty-task chain's dependent-hop latency. Emulated figures are host times,
// which the caller must not report as GPU times.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "driver/mpk_program.h"
#include "mpk/bench/hop_chain.h"
#include "mpk/bench/megakernel_bench.h"

namespace weft {

struct MpkBenchReport {
  int64_t tasks = 0;     // of the step's task graph
  MegakernelBench step;  // per-kernel launches, their CUDA graph, the persistent kernel
  // A decode-step program: per-token time of whole decodes (up to 32 tokens) with the loop on the
  // device at one token per launch and at iterations_per_launch, and of the per-kernel device loop
  // (on a GPU also as a CUDA graph).
  int resident_tokens = 0;
  uint64_t batched_tokens = 0;  // tokens per launch of resident_batched
  std::optional<Timing> resident, resident_batched, per_kernel_decode, per_kernel_graph;
};

// What bench_megakernel_program measures beyond the step, and whom it tells what it is doing (each
// build runs nvcc; a decode seeds and places the weights again: minutes at the 0.6B size).
struct MpkBenchScope {
  bool decode = true;  // a decode-step program's whole-decode figures
  std::function<void(const std::string&)> progress;
};

// `p` prepared for emulation or a GPU (without the decode loop: the decode figures build their
// own). UserError as for MegakernelProgram and the per-kernel backend.
MpkBenchReport bench_megakernel_program(const MpkProgram& p, const MegakernelBenchOptions& options,
                                        const MpkBenchScope& scope = {});

// The empty-task chain on `platform` (emulation or gpu): options.emulated and arch follow it, and
// 0 workers become default_megakernel_workers.
HopBench bench_hop_chain(HopBenchOptions options, MpkPlatform platform);

}  // namespace weft
