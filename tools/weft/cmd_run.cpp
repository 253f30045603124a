// `weft run FILE [--seed N] [--dtype f32|f64] [--backend interp|cpu|cuda|cuda-emulation]
// [--compare REF]`: runs a µGraph on seeded random inputs with the reference interpreter (or a
// backend) and summarizes each output, or compares it to another program's outputs on the same
// inputs (exit 3 when outside the tolerance). The work is driver/run.h's. `weft run DIR --inputs
// IN.npz --outputs OUT.npz [--function F] [--megakernel [--workers N]]` runs a compiled model
// (driver/compiled_dir.h), with --megakernel as one persistent kernel (driver/model_megakernel.h).
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "core/target.h"
#include "driver/compiled_dir.h"
#include "driver/model_megakernel.h"
#include "driver/mpk_run.h"
#include "driver/run.h"
#include "interp/random_inputs.h"
#include "lower/plan_text.h"
#include "tools/weft/command.h"
#include "tools/weft/thread_flags.h"

namespace weft::cli {
namespace {

void print_summary(const std::string& name, const TensorType& type, const OutputSummary& s) {
  std::string first;
  for (size_t i = 0; i < s.first.size(); ++i)
    first += fmt::format("{}{:.6g}", i ? ", " : "", s.first[i]);
  fmt::print("output {}: {}\n", name, type.str());
  fmt::print("  min {:.6g}  max {:.6g}  mean {:.6g}  l2 {:.6g}\n", s.min, s.max, s.mean, s.l2);
  fmt::print("  first [{}{}]  checksum {:016x}\n", first, s.count > 4 ? ", ..." : "", s.checksum);
}

// `weft run DIR --megakernel`: the function traced at the inputs' binding, one persistent kernel
// built from it (in emulation, or on the GPU with --backend cuda) and run; what it built on stderr.
std::map<std::string, Tensor<double>> run_megakernel(CompiledModelDir& dir,
                                                     const std::string& function,
                                                     const std::string& inputs, bool gpu,
                                                     int workers, const std::string& save_plan) {
  std::vector<VmValue> args = dir.arguments(function, read_npz(inputs), inputs);
  ModelMegakernelOptions options;
  options.function = function;
  options.platform = gpu ? MpkPlatform::gpu : MpkPlatform::emulation;
  options.workers = workers;
  ModelMegakernel m = model_megakernel(dir, args, options);
  if (!save_plan.empty()) {
    std::ofstream out(save_plan);
    out << print_plan(m.program.plan);
    if (!out) throw UserError(fmt::format("cannot write {}", save_plan));
  }
  ModelMegakernelRun r = run_model_megakernel(
      dir, m, args, [](const std::string& line) { fmt::print(stderr, "megakernel: {}\n", line); });
  fmt::print(stderr,
             "megakernel: ran in {:.3f} ms, outputs equal to its kernels run one by one; "
             "workspace {} bytes ({} in its buffers without reuse)\n",
             r.seconds * 1e3, r.workspace_bytes, r.unshared_bytes);
  return r.results;
}

}  // namespace

static Register reg(
    "run", "Run a µGraph on seeded random inputs (optionally comparing with another program)",
    [](CLI::App& sub) {
      auto file = std::make_shared<std::string>();
      auto compare = std::make_shared<std::string>();
      auto seed = std::make_shared<uint64_t>(0);
      auto dtype = std::make_shared<std::string>("f32");
      auto inputs = std::make_shared<std::string>();
      auto outputs = std::make_shared<std::string>();
      auto function = std::make_shared<std::string>("main");
      sub.add_option("FILE", *file, "µGraph file, or a directory `weft compile MODEL` wrote")
          ->required();
      sub.add_option("--inputs", *inputs, "Compiled models: arguments by parameter name (.npz)");
      sub.add_option("--outputs", *outputs, "Compiled models: where to write the result (.npz)");
      sub.add_option("--function", *function, "Compiled models: the function to run")
          ->capture_default_str();
      sub.add_option("--seed", *seed, "Seed of the random inputs (uniform in [-1, 1))")
          ->capture_default_str();
      sub.add_option("--dtype", *dtype,
                     "Arithmetic of the interpreter (declared dtypes are "
                     "not emulated)")
          ->check(CLI::IsMember({"f32", "f64"}))
          ->capture_default_str();
      auto backend = std::make_shared<std::string>("interp");
      auto target = std::make_shared<std::string>();
      CLI::Option* backend_option =
          sub.add_option(
                 "--backend", *backend,
                 "interp: the reference interpreter; cpu: compiled by the CPU backend (f32); "
                 "cuda: compiled by nvcc and run on the GPU (declared dtypes); "
                 "cuda-emulation: the same CUDA run on the host (declared dtypes). A "
                 "compiled model directory runs its µGraphs so (default cpu; cuda and "
                 "cuda-emulation: generated CUDA, for the directory's target when it is a GPU's)")
              ->check(CLI::IsMember({"interp", "cpu", "cuda", "cuda-emulation"}))
              ->capture_default_str();
      sub.add_option("--target", *target,
                     fmt::format("GPU target to lower for with --backend cuda (default: the "
                                 "device's) or cuda-emulation (default: {})",
                                 weft::kDefaultTargetName));
      sub.add_option("--compare", *compare,
                     "Reference program: run both on the same inputs and compare outputs "
                     "(exit 3 when an output is outside the tolerance)");
      auto megakernel = std::make_shared<bool>(false);
      sub.add_flag("--megakernel", *megakernel,
                   "Compiled models: run the function as one persistent kernel, traced at the "
                   "inputs' binding (host emulation; on the GPU with --backend cuda)");
      auto save_plan = std::make_shared<std::string>();
      sub.add_option("--save-plan", *save_plan,
                     "With --megakernel: also write the traced kernel plan (for `weft mpk "
                     "compile|run|bench|unit FILE.plan`)");
      auto workers = std::make_shared<int>(0);
      sub.add_option("--workers", *workers,
                     "With --megakernel: worker CTAs (default: the SMs but one on a GPU, 4 in "
                     "emulation)");
      auto threads = std::make_shared<int>(0);
      cli::add_threads_option(sub, *threads);
      return [=]() -> int {
        const cli::ThreadCap cap(*threads);
        if (is_compiled_model_dir(*file)) {
          if (inputs->empty() || outputs->empty())
            throw UserError("a compiled model runs on --inputs IN.npz --outputs OUT.npz");
          CompiledModelDir dir(*file);
          if (*megakernel && backend_option->count() > 0 && *backend != "cuda" &&
              *backend != "cuda-emulation")
            throw UserError("--megakernel runs with --backend cuda or cuda-emulation");
          const UGraphExecutor executor = backend_option->count() > 0
                                              ? *ugraph_executor_by_name(*backend)
                                              : UGraphExecutor::cpu;
          if (!save_plan->empty() && !*megakernel)
            throw UserError("--save-plan writes the plan of --megakernel");
          auto arrays = *megakernel ? run_megakernel(dir, *function, *inputs, *backend == "cuda",
                                                     *workers, *save_plan)
                                    : dir.run(*function, read_npz(*inputs), *inputs, executor);
          if (!dir.generic_path_note().empty())
            std::cerr << "note: " << dir.generic_path_note() << "\n";
          write_npz(*outputs, arrays, dir.output_elements(*function));
          for (const auto& [name, t] : arrays)
            std::cout << name << ": " << shape_str(t.shape) << "\n";
          return 0;
        }
        if (*megakernel) throw UserError("--megakernel runs a compiled model directory");
        if (!inputs->empty() || !outputs->empty())
          throw UserError(
              fmt::format("--inputs and --outputs run a compiled model directory; "
                          "{} is not one",
                          *file));
        RunOptions options;
        if (*backend != "interp") options.backend = backend_by_name(*backend);
        bool gpu = keeps_declared_dtypes(options);
        options.f32 = *dtype == "f32";
        options.target = *target;
        if (!target->empty() && !gpu)
          throw UserError("--target chooses the GPU of --backend cuda; other backends have one");
        // Before anything is compiled: without a device there is nothing to run on.
        if (options.backend) require_backend(*options.backend);
        std::string computed_in = *dtype;
        if (gpu)
          computed_in = *options.backend == Backend::cuda
                            ? "the declared dtypes on the GPU"
                            : "the declared dtypes in CUDA host emulation";
        Graph g = load_graph(*file);
        if (compare->empty()) {
          auto inputs = random_inputs(g, *seed);
          fmt::print("{}: {} input{}, seed {}, computed in {}\n", g.name.empty() ? *file : g.name,
                     inputs.size(), inputs.size() == 1 ? "" : "s", *seed, computed_in);
          auto outs = run_graph(g, inputs, options);
          for (size_t i = 0; i < outs.size(); ++i)
            print_summary(g.value(g.outputs[i]).name, g.type(g.outputs[i]),
                          summarize_output(outs[i]));
          return 0;
        }
        Graph ref = load_graph(*compare);
        require_same_signature(g, *file, ref, *compare);
        fmt::print(
            "{} vs {}: seed {}, computed in {}; tolerance: max |error| <= {:g} * max "
            "|reference|\n",
            *file, *compare, *seed, computed_in,
            output_tolerance(options, g.outputs.empty() ? DType::f32 : g.type(g.outputs[0]).dtype));
        ProgramComparison c = compare_programs(g, *file, ref, *compare, *seed, options);
        for (const OutputComparison& o : c.outputs)
          fmt::print(
              "output {} ({}): max abs error {:.3g}, max rel error {:.3g}, max |ref| "
              "{:.6g}, scaled error {:.3g}: {}\n",
              o.name, o.type.str(), o.comparison.max_abs_error, o.comparison.max_rel_error,
              o.comparison.max_ref, o.comparison.scaled_error,
              o.comparison.ok ? "within tolerance" : "OUTSIDE TOLERANCE");
        return c.all_ok ? 0 : 3;
      };
    });

}  // namespace weft::cli
