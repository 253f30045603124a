// Compiling a whole model into a directory as one library call (`weft compile MODEL -o DIR`,
// `weft.compile_model`): the compiled module (model.wmod) with its µGraphs (ugraphs/) and their
// generated code (code/), the original module (original.wmod), summary.json, and for an imported
// ONNX model its weights (weights.npz) and names (onnx_names.json). docs/model-compile.md.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/target.h"
#include "driver/compile_model.h"
#include "driver/model_file.h"

namespace weft {

// The directory's files.
namespace model_dir {
constexpr const char* kCompiledModule = "model.wmod";
constexpr const char* kOriginalModule = "original.wmod";
constexpr const char* kSummary = "summary.json";
// An imported ONNX model's weights (main's parameters after the graph inputs) and its names:
// inputs are given and outputs named by the ONNX graph's names.
constexpr const char* kWeights = "weights.npz";
constexpr const char* kOnnxNames = "onnx_names.json";

// Writes `text` to `path`; UserError when it cannot.
void write_text(const std::string& path, const std::string& text);
}  // namespace model_dir

struct ModelDirOptions {
  std::string target{kDefaultCompileTargetName};
  // The shapes to specialize for; none: a model without symbolic dims at its one shape, a
  // dynamic one not specialized (its directory runs every shape on the per-operator path).
  std::vector<SymBinding> bindings;
  double time_budget_s = kModelCompileTimeBudgetS;  // search over all regions (0: unlimited)
  int64_t state_budget = 0;                         // each region's search (0: unlimited)
  // The region cache's folder; empty: the build cache's folder + /regions. `no_cache`: none.
  std::string cache_dir;
  bool no_cache = false;
  bool no_build = false;  // write code/ without compiling it
  int max_region_ops = kDefaultMaxRegionOps;
  // The rewrite step (ModelCompileOptions::rewrite): on for a compile to a directory (it pays on
  // the corpus's transformers, docs/rewrites.md); the library call's default is off.
  RewriteMode rewrite = ModelRewriteOptions{}.mode;
  std::string rules;  // its rule file; empty: the default set
  bool fuse = true;   // the fuse step (ModelCompileOptions::fuse_conv_epilogues)
  std::function<void(const std::string&)> progress;  // ModelCompileOptions::progress
  std::string stop_after;                            // ModelCompileOptions::stop_after
};

struct ModelDirReport {
  ModelCompileResult result;
  nlohmann::ordered_json summary;  // what summary.json holds
  int ugraphs = 0;                 // µGraphs of the compiled module
  int built = 0;                   // of them, built (no_build: 0)
  std::string not_built;           // why the last one not built was not
  // Set when a dynamic model was compiled without bindings: what runs and how to add them.
  std::string unspecialized_note;
};

// Compiles `model` (loaded by load_model_file with `prover`) at the options' bindings and writes
// the directory `out_dir` (created; files in it are replaced). With stop_after, the compile stops
// after that step and nothing is written (report.result.step_text holds the module's text).
// No bindings: a model whose entry functions have no symbolic variables compiles at its one shape
// (the empty binding); a dynamic one is written unspecialized, with report.unspecialized_note.
// UserError for a binding that is not of the model's variables, an unknown target or step, or a
// file that cannot be written.
ModelDirReport compile_model_to_dir(const ModelFile& model, SymProver& prover,
                                    const std::string& out_dir, const ModelDirOptions& options);

}  // namespace weft
