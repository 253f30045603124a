// `weft mpk compile FILE -o DIR` writes NAME.tgraph, NAME.mpk (the encoded blob) and
// NAME.tgraph.dot and prints a summary; `--stop-after STEP` stops the step list there and
// `--print-after STEP` prints the task graph (.tgraph text) after that step. `weft mpk unit FILE -o
// FILE.cu` writes the persistent kernel's unit for a GPU target, as `weft mpk run --on gpu` builds
// it, for reading or compiling by hand.
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/target.h"
#include "driver/mpk_program.h"
#include "mpk/tgraph_dot.h"
#include "mpk/tgraph_text.h"
#include "tools/weft/mpk_commands.h"

namespace weft::cli {

MpkSubcommand add_mpk_compile(CLI::App& mpk) {
  struct Args {
    MpkArgs mpk;
    std::string out_dir, stop_after, print_after;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = mpk.add_subcommand("compile", "Write NAME.tgraph, NAME.mpk, NAME.tgraph.dot");
  add_mpk_flags(sub, a->mpk);
  sub->add_option("-o,--output", a->out_dir, "Output directory")->required();
  sub->add_option("--stop-after", a->stop_after, "Stop after this pass (decompose, deps, ...)");
  sub->add_option("--print-after", a->print_after,
                  "Print the task graph (.tgraph text) after this pass");
  return {sub, [a]() -> int {
            if (!a->print_after.empty()) check_mpk_step(a->print_after);
            const MpkProgram p = prepare_mpk_file(a->mpk, {});
            const MpkCompiled c = compile_megakernel(
                p, a->stop_after, [&](const std::string& step, const TaskGraph& g) {
                  if (step == a->print_after) fmt::print("{}", print_tgraph(g));
                });
            const std::filesystem::path dir(a->out_dir);
            std::error_code ec;
            std::filesystem::create_directories(dir, ec);
            if (ec)
              throw UserError(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
            write_file(dir / (p.name + ".tgraph"), print_tgraph(c.graph));
            write_file(dir / (p.name + ".tgraph.dot"), tgraph_to_dot(c.graph));
            if (!c.blob.empty())
              write_file(dir / (p.name + ".mpk"), std::string(c.blob.begin(), c.blob.end()));
            print_mpk_summary(p.name, c);
            fmt::print("  wrote {}/{}.tgraph, .tgraph.dot{}\n", dir.string(), p.name,
                       c.blob.empty() ? "" : ", .mpk");
            return 0;
          }};
}

MpkSubcommand add_mpk_unit(CLI::App& mpk) {
  struct Args {
    MpkArgs mpk;
    std::string out;
    std::string target = default_target().name;
    bool decode_loop = false;
    uint32_t schedulers = 1;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = mpk.add_subcommand(
      "unit", "Write the persistent kernel's CUDA unit (what --on gpu compiles with nvcc)");
  add_mpk_flags(sub, a->mpk);
  sub->add_option("-o,--output", a->out, "The .cu file")->required();
  sub->add_option("--target", a->target, "A GPU target (weft targets)")->capture_default_str();
  sub->add_flag(
      "--decode-loop", a->decode_loop,
      "With the decode loop's tasks (a decode-step program, as `weft mpk run` builds it)");
  sub->add_option("--schedulers", a->schedulers, "Scheduler warps")->capture_default_str();
  return {sub, [a]() -> int {
            const Target& target = target_by_name(a->target);
            if (target.kind != TargetKind::gpu)
              throw UserError(fmt::format("--target {}: the persistent kernel needs a GPU target",
                                          target.name));
            MpkProgramOptions o;
            o.platform = MpkPlatform::emulation;
            o.target = &target;
            o.schedulers = a->schedulers;
            o.decode_loop = a->decode_loop;
            const MpkProgram p = prepare_mpk_file(a->mpk, o);
            const MegakernelUnit u = megakernel_unit(p);
            write_file(a->out, u.unit);
            fmt::print(
                "{}: {} tasks on {} workers (AOT imbalance {:.3f} in predicted time, {:.3f} in "
                "bytes), {} plan kernels, {} worker threads, {} B of body shared memory; wrote {} "
                "({} bytes; nvcc -arch={})\n",
                p.name, u.compiled.graph.tasks.size(), a->mpk.workers,
                u.compiled.balance.time_imbalance, u.compiled.balance.bytes_imbalance,
                p.plan.kernels.size(), u.fit.worker_threads, u.fit.body_smem_bytes, a->out,
                u.unit.size(), target.arch);
            return 0;
          }};
}

}  // namespace weft::cli
