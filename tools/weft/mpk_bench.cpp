// `weft mpk bench FILE --on emulation|gpu`: the per-kernel launches, their CUDA graph and the
// persistent kernel timed on the same seeded inputs against the weight-bandwidth floor, with a
// decode-step program's whole decodes per token; `weft mpk hop --on emulation|gpu`: the empty-task
// chain's dependent-hop latency (driver/mpk_bench.h).
#include <fmt/format.h>

#include <memory>

#include "driver/mpk_bench.h"
#include "tools/weft/mpk_commands.h"

namespace weft::cli {
namespace {

void print_floor(const MpkBenchReport& r) {
  const MegakernelBench& s = r.step;
  if (!s.bandwidth_bytes_per_s) return;
  const double floor = *s.floor_s();
  fmt::print("  copy bandwidth:          {:.0f} GB/s (device-to-device cudaMemcpy)\n",
             *s.bandwidth_bytes_per_s * 1e-9);
  fmt::print(
      "  weight floor:            {:.1f} µs; persistent kernel at {:.0f}% of it, CUDA graph at "
      "{:.0f}%\n",
      floor * 1e6, 100 * floor / s.persistent.median_s, 100 * floor / s.cuda_graph->median_s);
  if (r.resident)
    fmt::print("  decode loop on device:   {:.0f}% of the floor (1 token per launch){}\n",
               100 * floor / r.resident->median_s,
               r.resident_batched
                   ? fmt::format(", {:.0f}% (batched)", 100 * floor / r.resident_batched->median_s)
                   : std::string());
  if (r.per_kernel_decode)
    fmt::print("  per-kernel device loop:  {:.0f}% of the floor (launches){}\n",
               100 * floor / r.per_kernel_decode->median_s,
               r.per_kernel_graph ? fmt::format(", {:.0f}% (CUDA graph)",
                                                100 * floor / r.per_kernel_graph->median_s)
                                  : std::string());
}

int bench(const MpkArgs& a, const std::string& on, uint32_t schedulers,
          const MegakernelBenchOptions& bo, bool step_only) {
  MpkProgramOptions o;
  o.platform = mpk_platform_by_name(on);
  o.schedulers = schedulers;
  const MpkProgram p = prepare_mpk_file(a, o);
  const bool gpu = o.platform == MpkPlatform::gpu;
  MpkBenchScope scope;
  scope.decode = !step_only;
  scope.progress = [](const std::string& line) { fmt::print(stderr, "mpk bench: {}\n", line); };
  const MpkBenchReport r = bench_megakernel_program(p, bo, scope);
  fmt::print("{} on {} ({}): {} tasks on {} workers ({}), {} plan kernels\n", p.name,
             p.target->name, gpu ? "GPU" : "host emulation: thread times, not GPU times", r.tasks,
             p.options.mpk.assign.workers, a.dispatch, p.plan.kernels.size());
  const MegakernelBench& s = r.step;
  fmt::print("  per-kernel launches:     {}\n", timing_text(s.per_kernel));
  if (s.cuda_graph) fmt::print("  per-kernel CUDA graph:   {}\n", timing_text(*s.cuda_graph));
  fmt::print("  persistent kernel:       {} per launch of one step\n", timing_text(s.persistent));
  if (s.persistent_batched)
    fmt::print("  persistent kernel:       {} per step, {} steps per launch\n",
               timing_text(*s.persistent_batched), s.batched_iterations);
  if (r.resident)
    fmt::print("  decode loop on device:   {} per token, 1 token per launch ({} tokens)\n",
               timing_text(*r.resident), r.resident_tokens);
  if (r.resident_batched)
    fmt::print("  decode loop on device:   {} per token, {} tokens per launch\n",
               timing_text(*r.resident_batched), r.batched_tokens);
  if (r.per_kernel_decode)
    fmt::print("  per-kernel device loop:  {} per token, the step's kernels launched one by one\n",
               timing_text(*r.per_kernel_decode));
  if (r.per_kernel_graph)
    fmt::print("  its CUDA graph:          {} per token, one graph replay per token\n",
               timing_text(*r.per_kernel_graph));
  fmt::print("  weight bytes per step:   {}\n", s.weight_bytes);
  print_floor(r);
  return 0;
}

}  // namespace

MpkSubcommand add_mpk_bench(CLI::App& mpk) {
  struct Args {
    MpkArgs mpk;
    MegakernelBenchOptions options;
    std::string on = "emulation";
    uint32_t schedulers = 1;
    bool step_only = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = mpk.add_subcommand(
      "bench",
      "Time the per-kernel launches, their CUDA graph and the persistent kernel on seeded "
      "inputs, against the weight-bandwidth floor");
  a->mpk.workers = 0;
  add_mpk_flags(sub, a->mpk);
  sub->add_option("--on", a->on, "emulation or gpu")
      ->check(CLI::IsMember({"emulation", "gpu"}))
      ->capture_default_str();
  sub->add_option("--schedulers", a->schedulers, "Scheduler warps")->capture_default_str();
  sub->add_option("--warmup", a->options.warmup, "Untimed runs")->capture_default_str();
  sub->add_option("--reps", a->options.reps, "Timed runs")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--iterations-per-launch", a->options.iterations_per_launch,
                  "Also time this many steps in one launch (0: no)")
      ->capture_default_str();
  sub->add_flag("--step-only", a->step_only,
                "Time one step alone, without a decode-step program's whole decodes (each of "
                "which seeds and places the weights again)");
  return {sub, [a]() { return bench(a->mpk, a->on, a->schedulers, a->options, a->step_only); }};
}

MpkSubcommand add_mpk_hop(CLI::App& mpk) {
  struct Args {
    HopBenchOptions options;
    std::string on = "emulation", dispatch = "aot";
  };
  auto a = std::make_shared<Args>();
  CLI::App* hop = mpk.add_subcommand(
      "hop", "Measure the persistent kernel's dependent-hop latency on an empty-task chain");
  hop->add_option("--on", a->on, "emulation or gpu")
      ->check(CLI::IsMember({"emulation", "gpu"}))
      ->capture_default_str();
  hop->add_option("--tasks", a->options.tasks, "Chain length")->capture_default_str();
  a->options.workers = 0;
  hop->add_option("--workers", a->options.workers,
                  "Worker CTAs, the chain crossing them in turn (0: one per SM but one on a GPU, "
                  "4 in emulation)")
      ->capture_default_str();
  hop->add_option("--dispatch", a->dispatch, "aot or jit")
      ->check(CLI::IsMember({"aot", "jit"}))
      ->capture_default_str();
  hop->add_option("--schedulers", a->options.schedulers, "Scheduler warps")->capture_default_str();
  hop->add_option("--threads", a->options.worker_threads, "Threads per worker CTA")
      ->capture_default_str();
  hop->add_option("--reps", a->options.reps, "Traced launches")->capture_default_str();
  return {hop, [a]() -> int {
            HopBenchOptions o = a->options;
            o.jit = a->dispatch == "jit";
            const MpkPlatform platform = mpk_platform_by_name(a->on);
            if (o.workers == 0)
              o.workers = static_cast<uint32_t>(default_megakernel_workers(platform));
            const HopBench h = bench_hop_chain(o, platform);
            fmt::print("empty-task chain: {} tasks on {} workers ({}), {} ({})\n", o.tasks,
                       o.workers, o.jit ? "jit" : "aot",
                       platform == MpkPlatform::gpu ? "GPU" : "host emulation",
                       platform == MpkPlatform::gpu ? "one persistent kernel"
                                                    : "thread times, not GPU times");
            fmt::print(
                "  hop (trace, {} hops):   median {:.0f} ns, min {:.0f}, max {:.0f}, mean {:.0f}\n",
                h.hops.hops, h.hops.median_ns, h.hops.min_ns, h.hops.max_ns, h.hops.mean_ns);
            fmt::print("  launch, {} tasks:        {}\n", o.tasks, timing_text(h.chain));
            fmt::print("  launch, 2 tasks:          {}\n", timing_text(h.pair));
            fmt::print("  per hop from launches:    {:.0f} ns\n", h.launch_per_hop_s * 1e9);
            return 0;
          }};
}

}  // namespace weft::cli
