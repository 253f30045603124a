// `weft mpk compile|run|bench|hop|unit|decoder`: the mega-kernel (docs/mpk.md). The subcommands
// live in mpk_*.cpp; this file registers them and holds what they share.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/target.h"
#include "lower/plan_text.h"
#include "mpk/task_graph.h"
#include "tools/weft/command.h"
#include "tools/weft/mpk_commands.h"

namespace weft::cli {

void add_mpk_flags(CLI::App* sub, MpkArgs& a) {
  sub->add_option("FILE", a.file,
                  "µGraph file, or a kernel plan (.plan: `weft run DIR --megakernel --save-plan`)")
      ->required();
  sub->add_option("--workers", a.workers,
                  "Workers (one per SM on a GPU; with --on emulation|gpu and in bench, 0: one per "
                  "SM but one on a GPU, 4 in emulation)")
      ->capture_default_str();
  sub->add_option("--dispatch", a.dispatch, "aot, jit or hybrid")->capture_default_str();
  sub->add_option("--data-dependent", a.data_dependent,
                  "Plan kernels (k0, k1, ...) that are data-dependent (hybrid: dispatched JIT)");
  sub->add_option("--data-dependent-reads", a.data_dependent_reads,
                  "Also mark the kernels loading a tensor named with this prefix (default: a "
                  "declared decode step's attention kernels, the readers of its KV caches)");
}

MpkProgram prepare_mpk_file(const MpkArgs& a, MpkProgramOptions o) {
  o.workers = a.workers;
  o.dispatch = dispatch_by_name(a.dispatch);
  o.data_dependent.insert(a.data_dependent.begin(), a.data_dependent.end());
  o.data_dependent_reads = a.data_dependent_reads;
  if (a.file.ends_with(".plan")) {
    std::ifstream in(a.file);
    if (!in) throw UserError(fmt::format("cannot read {}", a.file));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ProgramPlan plan = parse_plan(text, a.file);
    // A plan lowered for a GPU (a traced model's) runs as a persistent kernel, emulated unless
    // the command asked for the GPU.
    if (o.platform == MpkPlatform::host && target_by_name(plan.target).kind == TargetKind::gpu)
      o.platform = MpkPlatform::emulation;
    return prepare_megakernel(std::move(plan), o);
  }
  return prepare_megakernel(load_graph(a.file), o, std::filesystem::path(a.file).stem().string());
}

void print_mpk_summary(const std::string& name, const MpkCompiled& c) {
  const TaskGraph& g = c.graph;
  TaskGraphStats s = stats_of(g);
  fmt::print("{}: {} operators, {} tasks ({} empty, {} jit), {} events ({} before fusion)\n", name,
             g.ops.size(), s.tasks, s.empty_tasks, s.jit_tasks, s.events, c.events_before_fusion);
  fmt::print(
      "  dependencies: {} candidate pairs, {} ordered by a path already, {} compared byte for "
      "byte: {} read-after-write, {} write-after-read, {} write-after-write; {} edges after "
      "reduction\n",
      c.deps.candidates, c.deps.implied, c.deps.compared, c.deps.raw, c.deps.war, c.deps.waw,
      c.deps.edges);
  if (g.workers > 0) {
    const WorkerBalance& w = c.balance;
    fmt::print(
        "  {} workers, dispatch {}; AOT lists: imbalance (largest / mean) {:.3f} in predicted "
        "time, {:.3f} in bytes\n",
        g.workers, dispatch_name(g.dispatch), w.time_imbalance, w.bytes_imbalance);
    fmt::print("  per worker, predicted µs / MB / tasks:");
    for (size_t i = 0; i < w.tasks.size(); ++i)
      fmt::print(" w{}={:.1f}/{:.2f}/{}", i, w.time_ns[i] * 1e-3, w.bytes[i] * 1e-6, w.tasks[i]);
    fmt::print("\n");
  }
  if (!c.blob.empty())
    fmt::print("  blob {} bytes; compiled and verified in {:.2f} ms\n", c.blob.size(),
               c.seconds * 1e3);
}

std::string timing_text(const Timing& t) {
  return fmt::format("{:.1f} µs (min {:.1f}, max {:.1f}, {} runs)", t.median_s * 1e6, t.min_s * 1e6,
                     t.max_s * 1e6, t.reps);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) throw UserError(fmt::format("cannot write {}", path));
}

namespace {

Register reg("mpk", "Compile a program into an MPK task graph, or run it on the host runtime",
             [](CLI::App& sub) {
               sub.require_subcommand(1);
               const std::vector<MpkSubcommand> subcommands = {
                   add_mpk_compile(sub), add_mpk_run(sub), add_mpk_decoder(sub),
                   add_mpk_bench(sub),   add_mpk_hop(sub), add_mpk_unit(sub)};
               return [=]() -> int {
                 for (const MpkSubcommand& s : subcommands)
                   if (s.app->parsed()) return s.action();
                 return 1;
               };
             });

}  // namespace
}  // namespace weft::cli
