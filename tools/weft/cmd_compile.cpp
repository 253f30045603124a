// `weft compile FILE --target T -o DIR [--stop-after PASS] [--no-build]`: lowers a µGraph to its
// kernel plan and writes the plan text and the generated code, and builds the library (the CPU's
// C++ with c++, a GPU's CUDA with nvcc; both cached).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "codegen/cpu/emit_cpu.h"
#include "codegen/cuda/emit_cuda.h"
#include "core/target.h"
#include "lower/pipeline.h"
#include "lower/plan_text.h"
#include "runtime/cuda_runtime.h"
#include "runtime/runtime.h"
#include "tools/weft/command.h"

namespace weft::cli {
namespace {

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw UserError(fmt::format("cannot write {}", path.string()));
}

// Builds the plan's CUDA library with nvcc (cached), as `weft run/bench --backend cuda` will load
// it; needs the toolkit, not a GPU.
void build_cuda(const ProgramPlan& plan) {
  if (!cuda_runtime_built()) {
    fmt::print("(not built with nvcc: this weft was built without the CUDA toolkit)\n");
    return;
  }
  auto prog = compile_cuda_plan(plan);
  fmt::print("compiled {} with nvcc{}\n", prog->artifact(), prog->from_cache() ? " (cached)" : "");
}

}  // namespace

static Register reg(
    "compile", "Lower a µGraph to a kernel plan and generate code for a target", [](CLI::App& sub) {
      auto file = std::make_shared<std::string>();
      auto target = std::make_shared<std::string>("cpu");
      auto out_dir = std::make_shared<std::string>();
      auto stop = std::make_shared<std::string>();
      auto no_build = std::make_shared<bool>(false);
      sub.add_option("FILE", *file, "µGraph file")->required();
      sub.add_option("--target", *target, "Target (see `weft targets`)")->capture_default_str();
      sub.add_option("-o,--output", *out_dir,
                     "Directory for NAME.plan and NAME.cpp (CPU) or NAME.cu (GPU)")
          ->required();
      sub.add_option("--stop-after", *stop, "Stop the lowering pipeline after this pass");
      sub.add_flag("--no-build", *no_build,
                   "Write the code without compiling it (CPU: c++, GPU: nvcc)");
      return [=]() -> int {
        Graph g = load_graph(*file);
        const Target& t = target_by_name(*target);
        ProgramPlan plan = lower_graph(g, t, *stop);
        std::filesystem::path dir(*out_dir);
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (ec) throw UserError(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
        std::string stem = g.name.empty() ? std::filesystem::path(*file).stem().string() : g.name;
        write(dir / (stem + ".plan"), print_plan(plan));
        fmt::print("{}: {} kernel{} for {}, device workspace {} bytes\n", stem, plan.kernels.size(),
                   plan.kernels.size() == 1 ? "" : "s", t.name, plan.workspace_bytes);
        for (const KernelPlan& k : plan.kernels) {
          if (k.library)
            fmt::print("  {}: library {}\n", k.name, op_info(k.loop_steps.at(0).op).name);
          else
            fmt::print(
                "  {}: grid [{}, {}, {}], {} threads, loop {}, {} stage{}, shared memory peak {} "
                "bytes\n",
                k.name, k.grid[0], k.grid[1], k.grid[2], k.threads, k.loop, k.stages,
                k.stages == 1 ? "" : "s", k.smem_bytes);
        }
        fmt::print("wrote {}\n", (dir / (stem + ".plan")).string());
        if (t.kind != TargetKind::cpu) {
          if (!stop->empty() && *stop != lowering_passes().back()) return 0;
          write(dir / (stem + ".cu"), emit_cuda_source(plan));
          fmt::print("wrote {}\n", (dir / (stem + ".cu")).string());
          if (!*no_build) build_cuda(plan);
          return 0;
        }
        if (!stop->empty() && *stop != lowering_passes().back()) return 0;
        write(dir / (stem + ".cpp"), emit_cpu_source(plan));
        fmt::print("wrote {}\n", (dir / (stem + ".cpp")).string());
        if (!*no_build) {
          auto prog = compile_plan(plan);
          fmt::print("compiled {}{}\n", prog->artifact(), prog->from_cache() ? " (cached)" : "");
        }
        return 0;
      };
    });

}  // namespace weft::cli
