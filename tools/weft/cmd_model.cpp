// `weft model check | print | plan | partition | run | import | rewrite FILE`: the model layer's
// commands (docs/model-format.md); FILE may be an ONNX model (.onnx), imported first
// (docs/onnx.md).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "driver/compile_model.h"
#include "driver/model_file.h"
#include "driver/onnx_run.h"
#include "driver/partition_module.h"
#include "exec/run_io.h"
#include "model/expand.h"
#include "model/plan.h"
#include "model/printer.h"
#include "onnx/import.h"
#include "rewrite/default_rules.h"
#include "rewrite/model_rewrite.h"
#include "tools/weft/command.h"
#include "tools/weft/model_flags.h"
#include "tools/weft/thread_flags.h"

namespace {

// `weft model print --print-after STEP`: the model compile run through one of its steps before the
// search.
std::string compiled_step_text(const weft::Module& m, weft::SymProver& prover,
                               const std::string& step, const std::vector<std::string>& binds) {
  const auto& steps = weft::model_compile_steps();
  const auto search = std::find(steps.begin(), steps.end(), "superoptimize");
  if (std::find(search, steps.end(), step) != steps.end())
    throw weft::UserError(
        fmt::format("model print --print-after {}: the search runs by then; use weft compile MODEL "
                    "--print-after {}",
                    step, step));
  weft::ModelCompileOptions options;
  options.stop_after = step;
  for (const std::string& b : binds) options.bindings.push_back(weft::cli::parse_binding(b, m));
  return weft::compile_model(m, prover, options).step_text;
}

weft::cli::Register reg(
    "model", "Model files: check, print, plan, partition, run, import, rewrite", [](CLI::App& sub) {
      sub.require_subcommand(1);
      auto file = std::make_shared<std::string>();
      auto no_types = std::make_shared<bool>(false);
      auto show_vm = std::make_shared<bool>(false);
      CLI::App* check = sub.add_subcommand("check", "Parse, deduce types and check a module");
      check->add_option("FILE", *file, "model file (.wmod or .onnx)")->required();
      CLI::App* print = sub.add_subcommand("print", "Print a module in canonical form");
      print->add_option("FILE", *file, "model file (.wmod or .onnx)")->required();
      print->add_flag("--no-types", *no_types, "omit the deduced type comments");
      print->add_flag("--vm", *show_vm, "print each function's VM register program instead");
      auto print_after = std::make_shared<std::string>();
      auto print_binds = std::make_shared<std::vector<std::string>>();
      print->add_option("--print-after", *print_after,
                        "print the module after this step of the model compile instead: expand, "
                        "rewrite, specialize or partition (the search's steps: weft compile MODEL "
                        "--print-after STEP)");
      print->add_option(
          "--bind", *print_binds,
          "with --print-after: shapes to specialize for, NAME=VALUE,... (repeatable)");
      auto bind = std::make_shared<std::string>();
      auto element_bytes = std::make_shared<int>(0);
      CLI::App* plan = sub.add_subcommand("plan", "Print each function's memory plan");
      plan->add_option("FILE", *file, "model file (.wmod or .onnx)")->required();
      plan->add_option("--bind", *bind,
                       "evaluate the figures at this binding of the symbolic variables (b=2,n=16)");
      plan->add_option("--element-bytes", *element_bytes,
                       "bytes per element for every tensor (default: the declared dtype's size)")
          ->check(CLI::Range(0, 64));
      auto max_region_ops = std::make_shared<int>(weft::kDefaultMaxRegionOps);
      CLI::App* partition = sub.add_subcommand(
          "partition", "List each function's regions for the superoptimizer (composites expanded)");
      partition->add_option("FILE", *file, "model file (.wmod or .onnx)")->required();
      partition->add_option("--max-region-ops", *max_region_ops, "operators per region")
          ->check(CLI::Range(1, 1000))
          ->capture_default_str();
      auto inputs = std::make_shared<std::string>();
      auto outputs = std::make_shared<std::string>();
      auto function = std::make_shared<std::string>("main");
      auto executor = std::make_shared<std::string>("interp");
      auto stats = std::make_shared<bool>(false);
      CLI::App* run = sub.add_subcommand("run", "Run a function of a module on NumPy inputs");
      run->add_option("FILE", *file, "model file (.wmod or .onnx)")->required();
      auto inputs_pb = std::make_shared<std::string>();
      auto weights = std::make_shared<std::string>();
      run->add_option("--inputs", *inputs,
                      "arguments by parameter name (.npz; for .onnx by the ONNX input names)");
      run->add_option(
          "--inputs-pb", *inputs_pb,
          ".onnx only: a node-test data set directory (input_N.pb in graph-input order)");
      run->add_option("--weights", *weights,
                      ".wmod only: more arguments (.npz), e.g. the weights `model import` wrote");
      run->add_option("--outputs", *outputs, "where to write the result (.npz; f32)")->required();
      run->add_option("--function", *function, "the function to run (default: main)");
      run->add_option("--ugraph-executor", *executor,
                      "how call_ugraph runs µGraphs: interp (reference interpreter) or cpu "
                      "(compiled CPU program)")
          ->check(CLI::IsMember({"interp", "cpu"}));
      run->add_flag("--stats", *stats, "print the VM's counters and memory figures");
      auto threads = std::make_shared<int>(0);
      weft::cli::add_threads_option(*run, *threads);
      auto no_plan = std::make_shared<bool>(false);
      auto poison = std::make_shared<bool>(false);
      auto storage = std::make_shared<std::string>("arena");
      run->add_option(
             "--storage", *storage,
             "static plans: one arena sized by the bounds (arena, default) or each storage "
             "sized at run time (sized)")
          ->check(CLI::IsMember({"arena", "sized"}));
      run->add_flag("--no-plan", *no_plan, "allocate every tensor on its own (no memory plan)");
      run->add_flag("--poison", *poison,
                    "fill planned storage with NaN when allocated and when each tensor dies");
      auto bounds = std::make_shared<std::vector<std::string>>();
      auto out_wmod = std::make_shared<std::string>();
      CLI::App* import = sub.add_subcommand(
          "import", "Import an ONNX model: .wmod text and its weights (.npz next to it)");
      import->add_option("FILE", *file, "model file (.onnx)")->required();
      import->add_option("-o,--output", *out_wmod,
                         "the .wmod to write (its weights go to the same path with .npz); default: "
                         "print the module, write no weights");
      CLI::App* rewrite = sub.add_subcommand(
          "rewrite",
          "Rewrite a model with generated rules (TASO, docs/rewrites.md): the module after "
          "composites are expanded and rules applied, and a line per function on stderr");
      rewrite->add_option("FILE", *file, "model file (.wmod or .onnx)")->required();
      auto rw = std::make_shared<weft::ModelRewriteOptions>();
      auto rules_path = std::make_shared<std::string>("default");
      auto rw_bind = std::make_shared<std::string>();
      auto rw_mode = std::make_shared<std::string>(weft::rewrite_mode_name(rw->mode));
      rewrite->add_option("-o,--output", *out_wmod, "the .wmod to write (default: print it)");
      rewrite
          ->add_option("--rules", *rules_path,
                       "rule file (`weft rules generate`); default: the rules weft ships")
          ->capture_default_str();
      rewrite
          ->add_option("--mode", *rw_mode,
                       "none, backtrack (TASO's search) or egraph (equality saturation, greedy "
                       "extraction)")
          ->check(CLI::IsMember({"none", "backtrack", "egraph"}))
          ->capture_default_str();
      rewrite->add_option("--bind", *rw_bind,
                          "sizes to predict and check at, NAME=VALUE,... (others: 64, or less "
                          "where bounded)");
      rewrite->add_option("--time-budget", rw->time_budget_s, "seconds over the model (0: none)")
          ->capture_default_str();
      rewrite
          ->add_option("--states", rw->state_budget,
                       "backtrack: graphs per function (0: unlimited)")
          ->capture_default_str();
      rewrite->add_option("--egraph-nodes", rw->egraph.max_nodes, "egraph: e-nodes per block")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
      rewrite
          ->add_option("--egraph-iterations", rw->egraph.max_iterations,
                       "egraph: rounds of applying every rule")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
      rewrite
          ->add_option("--alpha", rw->alpha,
                       "graphs up to this factor slower than the best stay in the search")
          ->capture_default_str();
      rewrite->add_option("--target", rw->target, "whose cost model judges (see `weft targets`)")
          ->capture_default_str();
      for (CLI::App* c : {check, print, plan, partition, run, import, rewrite})
        c->add_option("--bound", *bounds, weft::cli::bound_help());
      return [=]() -> int {
        auto vm_options = [&] {
          weft::VmOptions options;
          options.ugraph_executor =
              *executor == "cpu" ? weft::UGraphExecutor::cpu : weft::UGraphExecutor::interpreter;
          options.plan = !*no_plan;
          options.poison = *poison;
          options.static_arena = *storage == "arena";
          return options;
        };
        weft::SymProver prover;
        weft::OnnxImportOptions import_options;
        for (const std::string& b : *bounds) weft::cli::parse_bound(b, import_options);
        // A run given integer inputs imports with them fixed (below): no import of its own here.
        bool run_onnx = run->parsed() && weft::is_onnx_path(*file);
        std::optional<weft::cli::ThreadCap> cap;
        if (run->parsed()) cap.emplace(*threads);
        if (import->parsed() && !weft::is_onnx_path(*file))
          throw weft::UserError(weft::SourceLoc{*file}, "model import reads ONNX files (.onnx)");
        weft::ModelFile model;
        if (!run_onnx) model = weft::load_model_file(*file, prover, import_options);
        if (model.imported) weft::cli::print_notes(model.imported->notes);
        const weft::Module& m = model.module;
        if (import->parsed()) {
          if (out_wmod->empty()) {
            std::cout << weft::print_module(m);
            return 0;
          }
          std::string npz = std::filesystem::path(*out_wmod).replace_extension(".npz").string();
          std::ofstream(*out_wmod) << weft::print_module(m);
          weft::write_npz(npz, model.imported->weights,
                          weft::weight_elements(m, model.imported->weights));
          std::cout << fmt::format("{}: {}; {} weights in {}\n", *out_wmod, weft::module_summary(m),
                                   model.imported->weights.size(), npz);
          return 0;
        }
        if (rewrite->parsed()) {
          weft::ModelRewriteOptions options = *rw;
          options.mode = weft::rewrite_mode_from_name(*rw_mode);
          if (!rw_bind->empty()) options.at = weft::cli::parse_binding(*rw_bind, m);
          if (model.imported)  // its weights fold when it is compiled: priced as free
            for (const auto& [name, value] : model.imported->weights)
              options.constants.insert(name);
          options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
          const std::vector<weft::Rule> rules = weft::load_rules(*rules_path);
          weft::ModelRewriteResult r =
              weft::rewrite_model(weft::expand_composites(m, prover), rules, options, prover);
          std::cerr << weft::rewrite_summary(r);
          if (out_wmod->empty()) {
            std::cout << weft::print_module(r.module);
          } else {
            std::ofstream(*out_wmod) << weft::print_module(r.module);
            std::cout << fmt::format("{}: {}; {} rewrite(s)\n", *out_wmod,
                                     weft::module_summary(r.module), r.rewrites());
          }
          return 0;
        }
        if (check->parsed()) {
          std::cout << "ok: " << weft::module_summary(m) << "\n";
          return 0;
        }
        if (print->parsed() && *show_vm) {
          weft::Vm vm(m);
          for (const weft::Function& f : m.functions)
            std::cout << "fn " << f.name << ":\n" << vm.disassemble(f.name);
          return 0;
        }
        if (print->parsed() && !print_after->empty()) {
          std::cout << compiled_step_text(m, prover, *print_after, *print_binds);
          return 0;
        }
        if (print->parsed()) {
          std::cout << weft::print_module(m, !*no_types);
          return 0;
        }
        if (plan->parsed()) {
          weft::PlanOptions po;
          po.element_bytes = *element_bytes;
          std::optional<weft::SymBinding> binding;
          if (!bind->empty()) binding = weft::cli::parse_binding(*bind, m);
          weft::Module expanded = weft::expand_composites(m, prover);  // as the VM runs it
          std::cout << weft::plan_str(weft::plan_memory(expanded, prover, po), expanded, binding);
          return 0;
        }
        if (partition->parsed()) {
          weft::PartitionOptions po;
          po.max_region_ops = *max_region_ops;
          weft::Module expanded = weft::expand_composites(m, prover);
          std::cout << weft::regions_str(weft::partition_module(expanded, po));
          return 0;
        }
        if (run_onnx) {
          if (inputs->empty() == inputs_pb->empty())
            throw weft::UserError("model run: give --inputs IN.npz or --inputs-pb DIR");
          std::map<std::string, weft::Tensor<double>> in;
          std::vector<std::string> integral;
          if (!inputs_pb->empty()) {
            in = weft::onnx_inputs_from_pb(weft::onnx_graph_info(*file), *inputs_pb, &integral);
          } else {
            for (auto& [name, a] : weft::read_npz(*inputs)) {
              in[name] = a.tensor;
              if (a.integral) integral.push_back(name);
            }
          }
          weft::ImportedModel onnx = weft::import_for_run(*file, import_options, in, integral);
          weft::cli::print_notes(onnx.notes);
          auto arrays =
              weft::run_imported(onnx, in, inputs->empty() ? *inputs_pb : *inputs, vm_options());
          weft::write_npz(*outputs, arrays, weft::imported_output_elements(onnx));
          for (const auto& [name, t] : arrays)
            std::cout << name << ": " << weft::shape_str(t.shape) << "\n";
          return 0;
        }
        if (run->parsed()) {
          if (inputs->empty()) throw weft::UserError("model run: --inputs IN.npz is required");
          const weft::Function& fn = weft::function_to_run(m, *function, weft::SourceLoc{*file});
          weft::NpzArrays in = weft::read_npz(*inputs);
          if (!weights->empty())
            for (auto& [name, a] : weft::read_npz(*weights)) in.emplace(name, a);
          auto args = weft::arguments_from_npz(fn, in, *inputs);
          weft::Vm vm(m, vm_options());
          weft::VmValue result = vm.run(*function, args);
          auto arrays = weft::result_arrays(result);
          weft::write_npz(*outputs, arrays, weft::result_elements(fn.ret));
          for (const auto& [name, t] : arrays)
            std::cout << name << ": " << weft::shape_str(t.shape) << "\n";
          if (*stats) {
            const weft::VmStats& st = vm.stats();
            std::cout << fmt::format(
                "vm: {} instructions, {} calls, {} frees; peak bytes (f32): naive {}, planned {}, "
                "live {}; {} bytes produced\n",
                st.instructions, st.calls, st.frees, st.peak_naive_bytes, st.peak_planned_bytes,
                st.peak_live_bytes, st.total_alloc_bytes);
          }
          return 0;
        }
        return 1;
      };
    });

}  // namespace
