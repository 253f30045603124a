// The per-kernel, CUDA-graph and persistent-kernel timings of one plan, and its weight floor.
#include "mpk/bench/megakernel_bench.h"

#include "core/error.h"
#include "mpk/decode_interface.h"
#include "runtime/cuda_runtime.h"
#include "runtime/timing.h"

namespace weft {

std::optional<double> MegakernelBench::floor_s() const {
  if (!bandwidth_bytes_per_s || *bandwidth_bytes_per_s <= 0) return std::nullopt;
  return static_cast<double>(weight_bytes) / *bandwidth_bytes_per_s;
}

int64_t step_weight_bytes(const ProgramPlan& plan) {
  const std::optional<DecodeInterface> decode =
      declares_decode_interface(plan) ? std::optional(decode_interface(plan)) : std::nullopt;
  int64_t bytes = 0;
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    if (!decode || !decode->is_state_input(i)) bytes += plan.find_tensor(plan.inputs[i])->bytes();
  return bytes;
}

MegakernelBench bench_megakernel(const MegakernelProgram& mk, const Program& per_kernel,
                                 const std::vector<std::vector<float>>& inputs,
                                 const MegakernelBenchOptions& o) {
  WEFT_CHECK(per_kernel.backend() != Backend::cpu, "the per-kernel path runs a GPU plan");
  MegakernelBench b;
  b.weight_bytes = step_weight_bytes(mk.plan());
  b.per_kernel = per_kernel.time(inputs, o.warmup, o.reps);
  const bool gpu = per_kernel.backend() == Backend::cuda;
  if (gpu) b.cuda_graph = time_cuda_graph(per_kernel, inputs, o.warmup, o.reps);
  b.persistent = mk.time(inputs, 1, o.warmup, o.reps);
  if (o.iterations_per_launch > 1) {
    b.batched_iterations = o.iterations_per_launch;
    Timing t = mk.time(inputs, o.iterations_per_launch, o.warmup, o.reps);
    const double n = static_cast<double>(o.iterations_per_launch);
    t.median_s /= n;
    t.min_s /= n;
    t.max_s /= n;
    b.persistent_batched = t;
  }
  if (gpu) b.bandwidth_bytes_per_s = measure_copy_bandwidth();
  return b;
}

Timing bench_resident_decode(const MegakernelProgram& resident, int tokens, int per_launch,
                             int reps) {
  WEFT_CHECK(tokens >= 1 && per_launch >= 1 && reps >= 1, "{} tokens, {} per launch, {} reps",
             tokens, per_launch, reps);
  DecodeOptions d;
  d.tokens = tokens;
  ResidentDecodeOptions launch;
  launch.tokens_per_launch = per_launch;
  resident.decode(d, launch);
  std::vector<double> per_token;
  for (int i = 0; i < reps; ++i)
    per_token.push_back(resident.decode(d, launch).decode.run.seconds / tokens);
  return summarize_times(std::move(per_token));
}

Timing bench_per_kernel_decode(const PerKernelDecoder& decoder, int tokens, bool cuda_graph,
                               int reps) {
  WEFT_CHECK(tokens >= (cuda_graph ? 2 : 1) && reps >= 1, "{} tokens, {} reps", tokens, reps);
  DecodeOptions d;
  d.tokens = tokens;
  decoder.decode(d, {cuda_graph, false});
  std::vector<double> per_token;
  for (int i = 0; i < reps; ++i) {
    const PerKernelDecode r = decoder.decode(d, {cuda_graph, false});
    per_token.push_back(cuda_graph ? r.graph_seconds / static_cast<double>(r.graph_steps)
                                   : r.launched_seconds / static_cast<double>(r.launched_steps));
  }
  return summarize_times(std::move(per_token));
}

}  // namespace weft
