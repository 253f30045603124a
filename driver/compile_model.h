// Compiling a model, a named list of steps: composites expanded (expand), generated rules applied
// by cost (rewrite, rewrite/model_rewrite.h; off unless asked for), what depends on weights
// alone computed once (fold, driver/fold_constants.h; when the weights are given), entry functions
// specialized at the given shape bindings (specialize, model/specialize.h), the specialized
// functions partitioned into regions (partition, driver/partition_module.h), each region
// superoptimized with a share of the time budget or served from the disk cache (superoptimize,
// driver/region_cache.h), and replaced by a call_ugraph of its verified best µGraph (replace).
// docs/model-compile.md describes it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/budget.h"
#include "core/tensor.h"
#include "driver/partition_module.h"
#include "model/fuse_conv_epilogues.h"
#include "model/module.h"
#include "model/specialize.h"
#include "rewrite/model_rewrite.h"
#include "rewrite/rule.h"
#include "search/config.h"

namespace weft {

// Seconds of search over all of a model's regions unless the caller says otherwise (`weft compile
// MODEL`, weft.compile_model, ModelCompileOptions): the model compile's one default, beside the
// search's own for one program (time_budget_s in search/config_fields.def).
inline constexpr double kModelCompileTimeBudgetS = 60;

// The steps in order: expand, rewrite, fold, specialize, fuse, partition, superoptimize, replace.
const std::vector<std::string>& model_compile_steps();

struct ModelCompileOptions {
  std::vector<SymBinding> bindings;  // the shapes to specialize for
  // The search of every region: its target is the compile's; time_budget_s is the total over
  // the regions searched (each gets the time left over the regions left); top_k is set to 1.
  SearchConfig search = [] {
    SearchConfig config;
    config.time_budget_s = kModelCompileTimeBudgetS;
    return config;
  }();
  // The rewrite step: mode none (this call's default, so a baseline compiled through it is the
  // model as written; a compile to a directory turns it on), egraph or backtrack, with `rules`
  // (empty: the default set). Its target is the compile's and its sizes the first binding's.
  ModelRewriteOptions rewrite = [] {
    ModelRewriteOptions r;
    r.mode = RewriteMode::none;
    return r;
  }();
  std::vector<Rule> rules;
  // The fuse step (model/fuse_conv_epilogues.h): on a CPU target built with a CPU library, each
  // convolution and its bias/residual/clip epilogue become one fused_conv, one library call with
  // post-ops. Off here (the per-operator baseline is the model as written); a compile to a
  // directory turns it on.
  bool fuse_conv_epilogues = false;
  // Parameters whose values the compile has (an imported model's weights, by name; may be null):
  // the fold step computes what depends on them alone once (driver/fold_constants.h), and the
  // rewrite step prices it as free.
  const std::map<std::string, Tensor<double>>* constants = nullptr;
  int max_region_ops = kDefaultMaxRegionOps;  // PartitionOptions::max_region_ops
  std::string cache_dir;                      // empty: no cache
  // false: each region becomes its own µGraph unsearched and uncached (with max_region_ops 1,
  // every table operator its own kernel: the per-operator CPU baseline `weft bench` times).
  bool search_regions = true;
  // A line per region as it starts ("region 3/12 ...") and per cache warning.
  std::function<void(const std::string&)> progress;
  // Run the steps through this one only (a name of model_compile_steps(); empty: all): the
  // result's module is the module after it, and step_text its text (`--print-after STEP`).
  std::string stop_after;
};

struct CompiledRegion {
  std::string function;           // the specialized function holding it
  std::vector<std::string> vars;  // the bindings it replaced, in order
  std::string ugraph;             // its µGraph in the module; empty when it stays as it was
  std::string skipped;            // why it stays (a type that is not a fixed shape)
  Graph source;                   // the region's own µGraph (what its µGraph is verified against)
  // Kernel launches and predicted time on the target: before, each table operator its own
  // kernel (the per-operator baseline, as the VM runs them); after, the verified best µGraph.
  int kernels_before = 0, kernels_after = 0;
  double predicted_before_s = 0, predicted_after_s = 0;
  std::string origin;  // "search", "baseline:RULE", "partition", or "input"
  std::string stop;    // why its search stopped ("" when it did not search)
  bool cache_hit = false;
  bool shared = false;  // same µGraph text as an earlier region: its µGraph is reused
  double search_s = 0;
};

struct ModelCompileResult {
  Module module;  // deduced; passes check_module (when every step ran)
  std::vector<Specialization> specializations;
  std::vector<std::string> skipped;  // entry functions a binding did not specialize
  ModelRewriteResult rewrites;       // the rewrite step's (no functions when it was off)
  // The fold step's new parameters (values by name) and how many bindings it folded away.
  std::map<std::string, Tensor<double>> folded;
  int folded_bindings = 0;
  std::vector<ConvFusion> conv_fusions;  // the fuse step's
  std::vector<CompiledRegion> regions;
  int cache_hits = 0, searched = 0;
  std::vector<std::string> warnings;  // unreadable cache entries
  // Why the searches stopped: the worst of the regions searched in this compile (complete when
  // none was).
  StopReason stop = StopReason::complete;
  double wall_s = 0;
  // With ModelCompileOptions::stop_after: the module's text after that step (after partition,
  // which leaves the module as it is, its regions follow as comments).
  std::string step_text;
};

// Compiles `module` (deduced). Deterministic given the searches' results; a search stopped by its
// budget still yields a verified µGraph (at worst the region itself). UserError for an unknown
// step in stop_after.
ModelCompileResult compile_model(const Module& module, SymProver& prover,
                                 const ModelCompileOptions& options);

}  // namespace weft
