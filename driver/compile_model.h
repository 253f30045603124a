// Compiling a model: composites expanded, entry functions specialized at the given shape
// bindings (model/specialize.h), the specialized functions partitioned into regions
// (driver/partition_module.h), each region superoptimized with a share of the time budget (or
// served from the disk cache, driver/region_cache.h) and replaced by a call_ugraph of its verified
// best µGraph. docs/model-compile.md describes it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "driver/partition_module.h"
#include "model/module.h"
#include "model/specialize.h"
#include "search/config.h"

namespace weft {

struct ModelCompileOptions {
  std::vector<SymBinding> bindings;  // the shapes to specialize for
  // The search of every region: its target is the compile's; time_budget_s is the total over
  // the regions searched (each gets the time left over the regions left); top_k is set to 1.
  SearchConfig search;
  int max_region_ops = 8;  // PartitionOptions::max_region_ops
  std::string cache_dir;   // empty: no cache
  // false: each region becomes its own µGraph unsearched and uncached (with max_region_ops 1,
  // every table operator its own kernel: the per-operator CPU baseline `weft bench` times).
  bool search_regions = true;
  // A line per region as it starts ("region 3/12 ...") and per cache warning.
  std::function<void(const std::string&)> progress;
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
  Module module;  // deduced; passes check_module
  std::vector<Specialization> specializations;
  std::vector<std::string> skipped;  // entry functions a binding did not specialize
  std::vector<CompiledRegion> regions;
  int cache_hits = 0, searched = 0;
  std::vector<std::string> warnings;  // unreadable cache entries
  double wall_s = 0;
};

// Compiles `module` (deduced). Deterministic given the searches' results; a search stopped by its
// budget still yields a verified µGraph (at worst the region itself).
ModelCompileResult compile_model(const Module& module, SymProver& prover,
                                 const ModelCompileOptions& options);

}  // namespace weft
