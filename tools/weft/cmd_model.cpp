// `weft model check | print | run FILE.wmod`: the model layer's commands (docs/model-format.md).
#include <fmt/format.h>

#include <iostream>

#include "model/deduce.h"
#include "model/parser.h"
#include "model/printer.h"
#include "model/run_io.h"
#include "tools/weft/command.h"

namespace {

weft::cli::Register reg("model", "Model files (.wmod): check, print, run", [](CLI::App& sub) {
  sub.require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto no_types = std::make_shared<bool>(false);
  auto show_vm = std::make_shared<bool>(false);
  CLI::App* check = sub.add_subcommand("check", "Parse, deduce types and check a module");
  check->add_option("FILE", *file, "model file (.wmod)")->required();
  CLI::App* print = sub.add_subcommand("print", "Print a module in canonical form");
  print->add_option("FILE", *file, "model file (.wmod)")->required();
  print->add_flag("--no-types", *no_types, "omit the deduced type comments");
  print->add_flag("--vm", *show_vm, "print each function's VM register program instead");
  auto inputs = std::make_shared<std::string>();
  auto outputs = std::make_shared<std::string>();
  auto function = std::make_shared<std::string>("main");
  auto executor = std::make_shared<std::string>("interp");
  auto stats = std::make_shared<bool>(false);
  CLI::App* run = sub.add_subcommand("run", "Run a function of a module on NumPy inputs");
  run->add_option("FILE", *file, "model file (.wmod)")->required();
  run->add_option("--inputs", *inputs, "arguments by parameter name (.npz)")->required();
  run->add_option("--outputs", *outputs, "where to write the result (.npz; f32)")->required();
  run->add_option("--function", *function, "the function to run (default: main)");
  run->add_option("--ugraph-executor", *executor,
                  "how call_ugraph runs µGraphs: interp (reference interpreter) or cpu "
                  "(compiled CPU program)")
      ->check(CLI::IsMember({"interp", "cpu"}));
  run->add_flag("--stats", *stats, "print the VM's counters and memory figures");
  return [=]() -> int {
    weft::SymProver prover;
    weft::Module m = weft::load_module(*file, prover);
    weft::check_module(m, prover);
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
    if (print->parsed()) {
      std::cout << weft::print_module(m, !*no_types);
      return 0;
    }
    if (run->parsed()) {
      const weft::Function& fn = weft::function_to_run(m, *function, weft::SourceLoc{*file});
      auto args = weft::arguments_from_npz(fn, weft::read_npz(*inputs), *inputs);
      weft::VmOptions options;
      options.ugraph_executor =
          *executor == "cpu" ? weft::UGraphExecutor::cpu : weft::UGraphExecutor::interpreter;
      weft::Vm vm(m, options);
      weft::VmValue result = vm.run(*function, args);
      auto arrays = weft::result_arrays(result);
      weft::write_npz(*outputs, arrays);
      for (const auto& [name, t] : arrays)
        std::cout << name << ": " << weft::shape_str(t.shape) << "\n";
      if (*stats) {
        const weft::VmStats& st = vm.stats();
        std::cout << fmt::format(
            "vm: {} instructions, {} calls, {} frees; peak live {} bytes, "
            "{} bytes produced (f32)\n",
            st.instructions, st.calls, st.frees, st.peak_live_bytes, st.total_alloc_bytes);
      }
      return 0;
    }
    return 1;
  };
});

}  // namespace
