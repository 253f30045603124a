// `weft compile FILE --target T -o DIR [--stop-after PASS] [--no-build]`: lowers a µGraph to its
// kernel plan and writes the plan text and the generated code, and builds the library (the CPU's
// C++ with c++, a GPU's CUDA with nvcc; both cached). The work is driver/compile.h's. A model
// file (.wmod, or .onnx through the importer) is compiled whole instead: `--bind`, `--bound`,
// `--time-budget`, `--cache`; the work is driver/compile_to_dir.h's (docs/model-compile.md).
// `--print-after STEP` prints the IR after a lowering pass or a model compile step and stops.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "core/target.h"
#include "driver/compile.h"
#include "driver/compile_to_dir.h"
#include "driver/compiled_dir.h"
#include "driver/model_megakernel.h"
#include "lower/pipeline.h"
#include "tools/weft/command.h"
#include "tools/weft/model_flags.h"

namespace weft::cli {
namespace {

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw UserError(fmt::format("cannot write {}", path.string()));
}

// The model flags (with FILE, -o, --target and --no-build, which µGraphs take too).
struct ModelArgs {
  std::vector<std::string> binds;
  std::vector<std::string> bounds;  // .onnx: NAME=N bounds of dim_param variables
  ModelDirOptions options;
  // --megakernel: these functions' persistent-kernel plans, one per binding
  // (driver/model_megakernel.h)
  std::vector<std::string> megakernel;
};

int compile_model_file(const std::string& file, const std::string& out_dir, const ModelArgs& args) {
  SymProver prover;
  OnnxImportOptions import_options;
  for (const std::string& b : args.bounds) parse_bound(b, import_options);
  ModelFile model = load_model_file(file, prover, import_options);
  if (model.imported) print_notes(model.imported->notes);
  ModelDirOptions options = args.options;
  for (const std::string& b : args.binds)
    options.bindings.push_back(parse_binding(b, model.module));
  options.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  ModelDirReport report = compile_model_to_dir(model, prover, out_dir, options);
  if (!report.unspecialized_note.empty()) fmt::print(stderr, "{}\n", report.unspecialized_note);
  if (!options.stop_after.empty()) {
    fmt::print("{}", report.result.step_text);
    return 0;
  }

  const ModelCompileResult& r = report.result;
  const auto& t = report.summary["totals"];
  fmt::print("{}: {} specialization{}, {} region{} ({} compiled), kernels {} -> {}\n", file,
             r.specializations.size(), r.specializations.size() == 1 ? "" : "s", r.regions.size(),
             r.regions.size() == 1 ? "" : "s", t["compiled"].get<int>(),
             t["kernels_before"].get<int>(), t["kernels_after"].get<int>());
  fmt::print("predicted on {} (regions only): {:.2f} us per-operator -> {:.2f} us compiled\n",
             target_by_name(options.target).name, t["predicted_before_us"].get<double>(),
             t["predicted_after_us"].get<double>());
  fmt::print("cache: {} hit{}, {} searched; compile {:.2f} s\n", r.cache_hits,
             r.cache_hits == 1 ? "" : "s", r.searched, r.wall_s);
  for (const std::string& s : r.skipped) fmt::print("not specialized: {}\n", s);
  if (!options.no_build)
    fmt::print("code: {} of {} µGraph{} built{}\n", report.built, report.ugraphs,
               report.ugraphs == 1 ? "" : "s",
               report.not_built.empty() ? "" : fmt::format(" ({})", report.not_built));
  fmt::print("wrote {}\n", out_dir);
  if (!args.megakernel.empty()) {
    CompiledModelDir dir(out_dir);
    for (const std::string& function : args.megakernel)
      for (const std::string& plan : write_dir_megakernels(dir, function))
        fmt::print("wrote {} (one persistent kernel: weft run {} --megakernel)\n", plan, out_dir);
  }
  return 0;
}

int compile_graph_file(const std::string& file, const std::string& out_dir,
                       const std::string& target_name, const std::string& stop_after,
                       bool no_build) {
  Graph g = load_graph(file);
  const Target& t = target_by_name(target_name);
  CompiledCode code = compile_graph(g, t, {.stop_after = stop_after});
  const ProgramPlan& plan = code.plan;
  std::filesystem::path dir(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UserError(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  std::string stem = g.name.empty() ? std::filesystem::path(file).stem().string() : g.name;
  write(dir / (stem + ".plan"), code.plan_text);
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
  if (!code.has_code) return 0;
  std::filesystem::path source = dir / (stem + code.source_extension);
  write(source, code.source);
  fmt::print("wrote {}\n", source.string());
  if (no_build) return 0;
  BuildReport built = build_code(code);
  bool nvcc = code.backend == Backend::cuda;
  if (!built.built)
    fmt::print("(not built with nvcc: {})\n", built.skipped);
  else
    fmt::print("compiled {}{}{}\n", built.artifact, nvcc ? " with nvcc" : "",
               built.from_cache ? " (cached)" : "");
  return 0;
}

std::string print_after_help() {
  return fmt::format(
      "Print the IR after this step on stdout and stop, writing nothing: a lowering pass for a "
      "µGraph ({}), a compile step for a model ({})",
      fmt::join(lowering_passes(), ", "), fmt::join(model_compile_steps(), ", "));
}

}  // namespace

static Register reg(
    "compile", "Lower a µGraph to a kernel plan and generate code for a target", [](CLI::App& sub) {
      auto file = std::make_shared<std::string>();
      auto target = std::make_shared<std::string>(kDefaultCompileTargetName);
      auto out_dir = std::make_shared<std::string>();
      auto stop = std::make_shared<std::string>();
      auto print_after = std::make_shared<std::string>();
      auto no_build = std::make_shared<bool>(false);
      auto model = std::make_shared<ModelArgs>();
      sub.add_option("FILE", *file, "µGraph file, or a model (.wmod, .onnx)")->required();
      sub.add_option("--bound", model->bounds, bound_help());
      sub.add_option(
          "--bind", model->binds,
          "Models: shapes to specialize for, NAME=VALUE,... (repeat for more; none: a model "
          "with fixed shapes at its shape, a dynamic one unspecialized)");
      sub.add_option("--time-budget", model->options.time_budget_s,
                     "Models: seconds of search over all regions (0: unlimited)")
          ->capture_default_str();
      sub.add_option("--states", model->options.state_budget,
                     "Models: state budget of each region's search (0: unlimited)");
      sub.add_option("--cache", model->options.cache_dir,
                     "Models: folder of the region cache (default: the build cache's + /regions)");
      sub.add_flag("--no-cache", model->options.no_cache, "Models: search every region again");
      auto megakernel = std::make_shared<bool>(false);
      sub.add_flag("--megakernel", *megakernel,
                   "Models: also trace each binding's run into one persistent kernel's plan "
                   "(DIR/megakernel/, run by `weft run DIR --megakernel`)");
      sub.add_option("--megakernel-function", model->megakernel,
                     "Models: the functions --megakernel traces (repeat; default: main)");
      sub.add_option("--max-region-ops", model->options.max_region_ops,
                     "Models: operators per region")
          ->check(CLI::Range(1, 1000))
          ->capture_default_str();
      auto rewrite = std::make_shared<std::string>(rewrite_mode_name(ModelRewriteOptions{}.mode));
      sub.add_option("--rewrite", *rewrite,
                     "Models: apply generated rewrite rules before partitioning: none, "
                     "backtrack or egraph (docs/rewrites.md)")
          ->check(CLI::IsMember({"none", "backtrack", "egraph"}))
          ->capture_default_str();
      auto no_fuse = std::make_shared<bool>(false);
      sub.add_flag("--no-fuse", *no_fuse,
                   "Models, CPU target: keep each convolution's bias, residual and clip as weft "
                   "kernels instead of one library call (fused_conv)");
      sub.add_option("--rules", model->options.rules,
                     "Models: the rule file of --rewrite (default: the rules weft ships)");
      sub.add_option("--target", *target, "Target (see `weft targets`)")->capture_default_str();
      sub.add_option("-o,--output", *out_dir,
                     "Directory for NAME.plan and NAME.cpp (CPU) or NAME.cu (GPU), or the "
                     "compiled model (required unless --print-after)");
      sub.add_option("--print-after", *print_after, print_after_help());
      sub.add_option("--stop-after", *stop,
                     "µGraphs: stop the lowering pipeline after this pass and write its plan");
      sub.add_flag("--no-build", *no_build,
                   "Write the code without compiling it (CPU: c++, GPU: nvcc)");
      return [=]() -> int {
        if (out_dir->empty() && print_after->empty())
          throw UserError(
              "give the output directory with -o DIR (or print a step with "
              "--print-after STEP)");
        if (is_model_file(*file)) {
          if (!stop->empty())
            throw UserError("--stop-after applies to µGraph files only (models: --print-after)");
          ModelArgs args = *model;
          args.options.target = *target;
          args.options.no_build = *no_build;
          args.options.rewrite = rewrite_mode_from_name(*rewrite);
          args.options.fuse = !*no_fuse;
          args.options.stop_after = *print_after;
          if (*megakernel && args.megakernel.empty()) args.megakernel = {"main"};
          // A persistent kernel runs every operator on the device: no CPU library calls.
          if (*megakernel) args.options.fuse = false;
          if (!*megakernel && !args.megakernel.empty())
            throw UserError("--megakernel-function names what --megakernel traces");
          if (*megakernel && !print_after->empty())
            throw UserError("--megakernel writes plans into DIR; --print-after writes nothing");
          return compile_model_file(*file, *out_dir, args);
        }
        if (!model->binds.empty())
          throw UserError("--bind applies to model files (.wmod, .onnx) only");
        if (*megakernel) throw UserError("--megakernel applies to model files (.wmod, .onnx) only");
        if (!print_after->empty()) {
          CompiledCode code = compile_graph(load_graph(*file), target_by_name(*target),
                                            {.stop_after = *print_after});
          fmt::print("{}", code.plan_text);
          return 0;
        }
        return compile_graph_file(*file, *out_dir, *target, *stop, *no_build);
      };
    });

}  // namespace weft::cli
