// `weft mpk run FILE`: runs the task graph and compares it with its reference (driver/mpk_run.h).
// --on host (the default) runs it on host threads against the kernels one after another; a
// decode-step program (one declaring `interface decode`) decodes tokens, any other runs its
// iterations on seeded inputs. --on emulation|gpu runs it as one persistent kernel in host
// emulation or on the GPU against the per-kernel CUDA path: a decode-step program decodes with the
// loop on the device (--tokens-per-launch N) against the same bodies launched one by one (on a GPU
// also as a CUDA graph) and the per-kernel path with the host hooks, or with --host-loop one
// launch per token with the hooks between. --trace writes every task's span as a Chrome/Perfetto
// trace; --dump writes a host decode's weights and logits.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "core/error.h"
#include "driver/mpk_run.h"
#include "testing/mpk_demo.h"
#include "tools/weft/mpk_commands.h"

namespace weft::cli {
namespace {

struct RunArgs {
  MpkArgs mpk;
  std::string on = "host", trace_file, dump;
  uint32_t schedulers = 1;
  uint64_t delay_seed = 0;
  DecodeOptions decode;  // tokens, prompt, seed, init std
  int tokens_per_launch = 1;
  bool host_loop = false, no_host_reference = false, logits = false;
};

void write_trace(const RunArgs& a, const std::string& json, const std::string& what) {
  if (a.trace_file.empty()) return;
  write_file(a.trace_file, json);
  fmt::print("  wrote the trace of {} to {}\n", what, a.trace_file);
}

int run_on_host(const RunArgs& a, const MegakernelRunner& runner) {
  const bool trace = !a.trace_file.empty();
  if (!runner.program().decoder()) {
    const uint64_t iterations = static_cast<uint64_t>(a.decode.tokens);
    const MpkRunReport r = runner.run({iterations, a.delay_seed, trace, {}});
    write_trace(a, r.trace_json, fmt::format("{} task runs", r.traced_tasks));
    fmt::print("  {} iterations in {:.3f} ms: outputs {}\n", iterations, r.seconds * 1e3,
               r.same ? "identical to sequential execution" : "DIFFER from sequential execution");
    return r.same ? 0 : 3;
  }
  DecodeOptions d = a.decode;
  d.keep_weights = !a.dump.empty();
  const DecodeComparison c = decode_on_host_runtime(runner, d, a.delay_seed, trace);
  write_trace(a, c.trace_json, fmt::format("{} task runs", c.traced_tasks));
  fmt::print("  tokens (task graph): {}\n", fmt::join(c.got.tokens, " "));
  fmt::print("  tokens (sequential): {}\n", fmt::join(c.want.tokens, " "));
  fmt::print("  {} tokens: task graph {:.3f} ms, sequential kernels {:.3f} ms\n", d.tokens,
             c.got.run.seconds * 1e3, c.want.run.seconds * 1e3);
  fmt::print("  {}\n", c.same() ? "identical tokens and logits" : "MISMATCH");
  if (!a.dump.empty()) {
    write_decode_dump(a.dump, d, c.got);
    fmt::print("  wrote {}/weights.npz, decode.npz\n", a.dump);
  }
  return c.same() ? 0 : 3;
}

const char* time_kind(bool gpu) {
  return gpu ? " (host wall time of launch and wait)" : " (host emulation: not a GPU time)";
}

// The decode loop on the device against the per-kernel loops on the device and (unless
// --no-host-reference) the per-kernel path with host hooks.
int decode_resident(const RunArgs& a, const MegakernelRunner& runner, bool gpu) {
  std::optional<DecodeResult> host;
  if (!a.no_host_reference) host = decode_per_kernel_with_host_hooks(runner.program(), a.decode);
  MpkDecodeOptions o;
  o.decode = a.decode;
  o.tokens_per_launch = a.tokens_per_launch;
  o.logits = a.logits;
  o.trace = !a.trace_file.empty();
  o.host_reference = host ? &*host : nullptr;
  const MpkDecodeReport r = runner.decode(o);
  const ResidentDecode& got = r.resident;
  fmt::print("  tokens (persistent kernel, decode loop on the device): {}\n",
             fmt::join(got.decode.tokens, " "));
  for (const auto& [name, loop] : r.per_kernel)
    fmt::print("  {:<54} {}\n", fmt::format("tokens ({}, loop on the device):", name),
               fmt::join(loop.decode.tokens, " "));
  if (host)
    fmt::print("  tokens (per-kernel path, host loop):                   {}\n",
               fmt::join(host->tokens, " "));
  const bool same = r.same.value_or(true);
  fmt::print("  {}\n", !same      ? "MISMATCH"
                       : a.logits ? "identical tokens and logits"
                                  : "identical tokens");
  const int per_launch = a.tokens_per_launch;
  fmt::print(
      "  {} launch{} of up to {} token{}: {:.3f} ms per token{}; placed once: {} bytes; per "
      "launch: {} bytes to the host, none to the device\n",
      got.launches, got.launches == 1 ? "" : "es", per_launch, per_launch == 1 ? "" : "s",
      got.decode.run.seconds * 1e3 / a.decode.tokens, time_kind(gpu), got.setup_bytes,
      got.bytes_per_launch);
  write_trace(a, r.trace_json,
              fmt::format("{} launch{} ({} steps of {} tasks)", got.traces.size(),
                          got.traces.size() == 1 ? "" : "es", a.decode.tokens,
                          runner.compiled().graph.tasks.size()));
  for (const auto& [name, loop] : r.per_kernel) {
    const bool graph = loop.graph_steps > 0;
    const double seconds = graph ? loop.graph_seconds : loop.launched_seconds;
    const int64_t steps = graph ? loop.graph_steps : loop.launched_steps;
    fmt::print(
        "  {}: {:.3f} ms per token{}{}; per step: {} bytes to the host, none to the device\n", name,
        seconds * 1e3 / static_cast<double>(steps),
        graph ? fmt::format(" (the {} replays after the first step)", steps) : "", time_kind(gpu),
        loop.bytes_per_step);
  }
  return same ? 0 : 3;
}

// One launch (any program), or one launch per token with the host hooks (--host-loop).
int run_launches(const RunArgs& a, const MegakernelRunner& runner, bool gpu) {
  const bool trace = !a.trace_file.empty();
  bool same = false;
  int steps = 1;
  double seconds = 0;
  std::string trace_json;
  size_t traced = 0;
  if (runner.program().decoder()) {
    steps = a.decode.tokens;
    const DecodeComparison c = decode_with_launches(runner, a.decode, trace);
    fmt::print("  tokens (persistent kernel): {}\n", fmt::join(c.got.tokens, " "));
    fmt::print("  tokens (per-kernel path):   {}\n", fmt::join(c.want.tokens, " "));
    same = c.same();
    fmt::print("  {}\n", same                            ? "identical tokens and logits"
                         : c.got.tokens == c.want.tokens ? "identical tokens, logits differ"
                                                         : "MISMATCH");
    seconds = c.seconds;
    trace_json = c.trace_json;
    traced = c.traced_tasks;
  } else {
    const MpkRunReport r = runner.run({1, 0, trace, {}});
    same = r.same;
    fmt::print("  outputs {}\n", same ? "identical to the per-kernel path" : "DIFFER");
    seconds = r.seconds;
    trace_json = r.trace_json;
    traced = r.traced_tasks;
  }
  fmt::print("  {} launch{}: {:.3f} ms per launch{}\n", steps, steps == 1 ? "" : "es",
             seconds * 1e3 / steps, gpu ? "" : " (host emulation: not a GPU time)");
  write_trace(a, trace_json, fmt::format("the last launch ({} task runs)", traced));
  return same ? 0 : 3;
}

int run(const RunArgs& a) {
  MpkProgramOptions o;
  o.platform = mpk_platform_by_name(a.on);
  o.schedulers = a.schedulers;
  MpkArgs flags = a.mpk;
  if (o.platform != MpkPlatform::host && flags.workers == 0)
    flags.workers = default_megakernel_workers(o.platform);
  MpkProgram p = prepare_mpk_file(flags, o);
  p.options.mpk.decode_on_device = o.platform != MpkPlatform::host && p.decoder() && !a.host_loop;
  const MegakernelRunner runner(std::move(p));
  const MpkProgram& program = runner.program();
  if (o.platform == MpkPlatform::host) {
    print_mpk_summary(program.name, runner.compiled());
    return run_on_host(a, runner);
  }
  const bool gpu = o.platform == MpkPlatform::gpu;
  const MegakernelProgram& mk = runner.megakernel();
  print_mpk_summary(program.name, runner.compiled());
  fmt::print(
      "  one persistent kernel on {} ({}): {} worker CTAs of {} threads and a protocol warp, "
      "{} B of body shared memory\n",
      program.target->name, gpu ? "GPU" : "host emulation", flags.workers, mk.fit().worker_threads,
      mk.fit().body_smem_bytes);
  return program.options.mpk.decode_on_device ? decode_resident(a, runner, gpu)
                                              : run_launches(a, runner, gpu);
}

}  // namespace

MpkSubcommand add_mpk_run(CLI::App& mpk) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* run_cmd =
      mpk.add_subcommand("run", "Run on host threads and compare with sequential execution");
  add_mpk_flags(run_cmd, a->mpk);
  run_cmd->add_option("--tokens", a->decode.tokens, "Decoded tokens (iterations)")
      ->capture_default_str();
  run_cmd->add_option("--schedulers", a->schedulers, "Scheduler threads")->capture_default_str();
  run_cmd->add_option("--delay-seed", a->delay_seed, "Nonzero: inject seeded random delays");
  run_cmd->add_option("--trace", a->trace_file,
                      "Write each task's span (start, end, worker) as a Chrome/Perfetto trace "
                      "(the decode loop on the device: every step of every launch; --host-loop: "
                      "the last launch)");
  run_cmd->add_option("--dump", a->dump, "Decoder: write DIR/weights.npz and DIR/decode.npz");
  run_cmd->add_option("--prompt", a->decode.prompt, "Decoder: tokens fed before greedy decoding");
  run_cmd->add_option("--seed", a->decode.seed, "Decoder: seed of the weights")
      ->capture_default_str();
  run_cmd
      ->add_option("--init-std", a->decode.normal_std,
                   "Decoder: standard deviation of normal weights (programs with an embedding "
                   "table)")
      ->capture_default_str();
  run_cmd
      ->add_option("--on", a->on,
                   "host (threads, CPU bodies), emulation or gpu (one persistent kernel)")
      ->check(CLI::IsMember({"host", "emulation", "gpu"}))
      ->capture_default_str();
  run_cmd
      ->add_option("--tokens-per-launch", a->tokens_per_launch,
                   "With --on emulation|gpu: decode steps per launch of the decode loop on the "
                   "device")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  run_cmd->add_flag("--host-loop", a->host_loop,
                    "With --on emulation|gpu: one launch per token with the decode loop's work "
                    "(embedding, rotary tables, cache append, argmax) on the host between "
                    "launches");
  run_cmd->add_flag("--no-host-reference", a->no_host_reference,
                    "With the decode loop on the device: compare with the per-kernel launches "
                    "only, not also with the per-kernel path driven by host hooks (slow at a "
                    "real size: every input is copied each step)");
  run_cmd->add_flag("--logits", a->logits,
                    "With the decode loop on the device: copy back and compare each launch's "
                    "last logits");
  return {run_cmd, [a]() { return run(*a); }};
}

}  // namespace weft::cli
