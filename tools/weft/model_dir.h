// The model side of `weft compile` / `run` / `bench`: compiling a model file into a directory
// (the compiled module, its µGraphs, generated code, summary.json), running a compiled directory
// through the VM, and timing it against the uncompiled module. docs/model-compile.md.
#pragma once

#include <string>
#include <vector>

#include "model/module.h"
#include "onnx/import.h"

namespace weft::cli {

// "b=2,n=16": values for declared symbolic variables of `m` (UserError otherwise).
SymBinding parse_binding(const std::string& text, const Module& m);

// "--bound n=512": an upper bound for the symbolic variable of an ONNX dim_param.
void parse_bound(const std::string& text, OnnxImportOptions& options);

// True for a model file `weft compile` takes (.wmod, .onnx).
bool is_model_file(const std::string& path);
// True for a directory `weft compile MODEL -o DIR` wrote.
bool is_compiled_model_dir(const std::string& path);

struct ModelCompileArgs {
  std::string file;
  std::string out_dir;
  std::string target = "cpu";
  std::vector<std::string> binds;
  std::vector<std::string> bounds;  // .onnx: NAME=N bounds of dim_param variables
  double time_budget_s = 60;
  int64_t state_budget = 0;
  std::string cache_dir;  // empty: the default (runtime/build_cache.h's folder + /regions)
  bool no_cache = false;
  bool no_build = false;
  int max_region_ops = 8;
};
int compile_model_file(const ModelCompileArgs& args);

int run_compiled_model(const std::string& dir, const std::string& inputs,
                       const std::string& outputs, const std::string& function);

int bench_compiled_model(const std::string& dir, const std::vector<std::string>& inputs,
                         const std::string& function, int warmup, int reps);

}  // namespace weft::cli
