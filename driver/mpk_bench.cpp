// The step and decode timings of a program, and the hop chain, on emulation or a GPU.
#include "driver/mpk_bench.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "driver/mpk_run.h"
#include "mpk/decode_interface.h"
#include "runtime/cuda_runtime.h"
#include "runtime/program.h"

namespace weft {

MpkBenchReport bench_megakernel_program(const MpkProgram& p, const MegakernelBenchOptions& bo,
                                        const MpkBenchScope& scope) {
  const auto say = [&](const std::string& line) {
    if (scope.progress) scope.progress(line);
  };
  if (p.platform == MpkPlatform::host)
    throw UserError("the persistent kernel's benchmark runs in emulation or on a GPU");
  const bool gpu = p.platform == MpkPlatform::gpu;
  MpkProgram step = p;
  step.options.mpk.decode_on_device = false;
  say("building the persistent kernel of one step");
  const MegakernelProgram mk(step.plan, step.options);
  say("building the per-kernel program");
  auto per_kernel = load_program(step.plan, gpu ? Backend::cuda : Backend::cuda_emulation);
  MpkBenchReport r;
  r.tasks = static_cast<int64_t>(mk.compiled().graph.tasks.size());
  say("timing the step: per-kernel launches, their CUDA graph, the persistent kernel");
  r.step = bench_megakernel(mk, *per_kernel, seeded_megakernel_inputs(step.plan), bo);
  if (!p.decoder() || !scope.decode) return r;
  // The decode loop on the device: per-token time of whole decodes, state resident.
  MpkProgram loop_program = p;
  loop_program.options.mpk.decode_on_device = true;
  say("building the persistent kernel with the decode loop");
  const MegakernelProgram loop(loop_program.plan, loop_program.options);
  r.resident_tokens = static_cast<int>(std::min<int64_t>(decode_interface(p.plan).ctx, 32));
  // Each decode seeds and places the weights again (untimed; seconds at the 0.6B size).
  const int reps = std::max(1, bo.reps / 10);
  say(fmt::format("timing whole decodes of {} tokens on the device", r.resident_tokens));
  r.resident = bench_resident_decode(loop, r.resident_tokens, 1, reps);
  if (bo.iterations_per_launch > 1) {
    r.batched_tokens =
        std::min<uint64_t>(bo.iterations_per_launch, static_cast<uint64_t>(r.resident_tokens));
    r.resident_batched =
        bench_resident_decode(loop, r.resident_tokens, static_cast<int>(r.batched_tokens), reps);
  }
  // The same bodies launched one by one, the decode loop's too, and (GPU) as a CUDA graph.
  say("building and timing the per-kernel decode loop");
  const PerKernelDecoder per_kernel_loop(p.plan, !gpu);
  r.per_kernel_decode = bench_per_kernel_decode(per_kernel_loop, r.resident_tokens, false, reps);
  if (gpu && r.resident_tokens > 1)
    r.per_kernel_graph = bench_per_kernel_decode(per_kernel_loop, r.resident_tokens, true, reps);
  return r;
}

HopBench bench_hop_chain(HopBenchOptions o, MpkPlatform platform) {
  if (platform == MpkPlatform::host) throw UserError("the hop chain runs in emulation or on a GPU");
  o.emulated = platform != MpkPlatform::gpu;
  if (!o.emulated) o.arch = target_for_device(require_cuda_device()).arch;
  if (o.workers == 0) o.workers = static_cast<uint32_t>(default_megakernel_workers(platform));
  return bench_hops(o);
}

}  // namespace weft
