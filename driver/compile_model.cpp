// The model compile pipeline as a named list of steps (expand, rewrite, fold, specialize, fuse,
// partition, superoptimize, replace), each a function of the state the earlier steps leave.
#include "driver/compile_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "cost/cost_model.h"
#include "cpulib/cpu_library.h"
#include "driver/fold_constants.h"
#include "driver/optimize.h"
#include "driver/region_cache.h"
#include "ir/printer.h"
#include "model/deduce.h"
#include "model/expand.h"
#include "model/printer.h"
#include "rewrite/default_rules.h"
#include "search/stats.h"

namespace weft {
namespace {

// The least time a region is searched for when the compile's budget is (nearly) spent.
constexpr double kLeastRegionBudgetS = 0.05;

// What the steps hand on.
struct CompileState {
  const ModelCompileOptions& options;
  SymProver& prover;
  const Target& target;
  const Budget budget;  // the whole compile's: the searched regions share its time
  Module module;        // after the last step run
  std::map<std::string, SymBinding> specialized;  // specialized function -> its binding
  std::vector<ModelRegion> regions;               // of the specialized functions
  std::vector<std::string> names;                 // regions[i]'s µGraph in the module
  ModelCompileResult result;

  void say(const std::string& line) const {
    if (options.progress) options.progress(line);
  }
};

// A region on its way to its µGraph.
struct Pending {
  size_t region = 0;  // index into the result's regions
  Graph graph;        // the region's µGraph, named "region"
  std::string text;   // its canonical text
  std::string key;    // its cache key
  SymBinding binding;
};

void expand_step(CompileState& s) {
  s.module = expand_composites(s.module, s.prover);
}

void rewrite_step(CompileState& s) {
  ModelRewriteOptions options = s.options.rewrite;
  if (options.mode == RewriteMode::none) return;
  options.target = s.target.name;
  if (!s.options.bindings.empty()) options.at = s.options.bindings.front();
  options.progress = s.options.progress;
  if (s.options.constants)
    for (const auto& [name, value] : *s.options.constants) options.constants.insert(name);
  s.result.rewrites = rewrite_model(
      s.module, s.options.rules.empty() ? default_rules() : s.options.rules, options, s.prover);
  s.module = s.result.rewrites.module;
}

void fold_step(CompileState& s) {
  if (!s.options.constants) return;
  FoldResult folded = fold_constants(s.module, *s.options.constants, s.prover);
  s.module = std::move(folded.module);
  s.result.folded = std::move(folded.folded);
  s.result.folded_bindings = folded.bindings;
  if (folded.bindings > 0)
    s.say(fmt::format("fold: {} binding(s) computed from weights alone, {} new weight(s)",
                      folded.bindings, s.result.folded.size()));
}

void specialize_step(CompileState& s) {
  SpecializeResult spec = specialize_module(s.module, s.options.bindings, s.prover);
  s.result.specializations = spec.specializations;
  s.result.skipped = spec.skipped;
  for (const Specialization& sp : s.result.specializations) s.specialized[sp.name] = sp.binding;
  s.module = std::move(spec.module);
}

// What the specialized functions' fixed sizes make constant, computed once (an imported model's
// range over the sequence, its attention mask's index arithmetic).
void refold_step(CompileState& s) {
  if (!s.options.constants || s.specialized.empty()) return;
  std::set<std::string> names;
  for (const auto& [name, binding] : s.specialized) names.insert(name);
  std::map<std::string, Tensor<double>> values = *s.options.constants;
  for (const auto& [name, value] : s.result.folded) values.emplace(name, value);
  FoldResult folded = fold_specialized(s.module, names, values, s.prover);
  s.module = std::move(folded.module);
  for (auto& [name, value] : folded.folded) s.result.folded.emplace(name, std::move(value));
  s.result.folded_bindings += folded.bindings;
  if (folded.bindings > 0)
    s.say(fmt::format("refold: {} binding(s) of the specialized functions computed once",
                      folded.bindings));
}

// Convolutions and their epilogues as single library calls, where the target runs them by one.
void fuse_step(CompileState& s) {
  if (!s.options.fuse_conv_epilogues || s.target.kind != TargetKind::cpu ||
      cpu_library_name().empty())
    return;
  FuseResult fused = fuse_conv_epilogues(s.module);
  s.module = std::move(fused.module);
  s.result.conv_fusions = std::move(fused.fusions);
  if (!s.result.conv_fusions.empty())
    s.say(fmt::format("fuse: {} convolution(s) with their epilogues, one library call each",
                      s.result.conv_fusions.size()));
}

// The regions of the specialized functions (the generic ones stay as they are).
void partition_step(CompileState& s) {
  PartitionOptions popt;
  popt.max_region_ops = s.options.max_region_ops;
  popt.search = s.options.search;
  for (ModelRegion& r : partition_module(s.module, popt))
    if (s.specialized.count(r.function)) s.regions.push_back(std::move(r));
}

// Every region's report, and its µGraph from the cache (verified again: an entry is a file anyone
// may have written, or an older weft) or, on a miss, queued for the search. A region whose text
// an earlier one has shares that one's µGraph.
std::vector<Pending> look_up_regions(CompileState& s, RegionCache& cache,
                                     std::vector<std::pair<size_t, Graph>>& found) {
  ModelCompileResult& result = s.result;
  std::map<std::string, std::string> by_text;  // region text -> its µGraph's name
  std::vector<Pending> to_search;
  // An entry that fails verification is reported and its region searched again (and its entry
  // rewritten).
  auto trusted = [&](const CachedRegion& hit, const Pending& p) {
    const VerifiedRecord v = verify_result(p.graph, hit.graph, s.options.search);
    if (v.equivalent && v.numerically_ok) return true;
    const std::string why = fmt::format(
        "cache entry {} is not verified equivalent to its region ({}); searching again",
        cache.path(p.key), !v.equivalent ? v.detail : "not numerically acceptable in f32");
    result.warnings.push_back(why);
    s.say("warning: " + why);
    return false;
  };
  s.names.assign(s.regions.size(), "");
  for (size_t i = 0; i < s.regions.size(); ++i) {
    const ModelRegion& r = s.regions[i];
    const Function* f = s.module.find_function(r.function);
    CompiledRegion report;
    report.function = r.function;
    for (int b : r.bindings)
      report.vars.push_back(
          f->blocks[static_cast<size_t>(r.block)].bindings[static_cast<size_t>(b)].var);
    std::string why;
    std::optional<Graph> g = region_graph(s.module, r, "region", &why);
    if (!g || r.outputs.empty()) {
      report.skipped = g ? "no value of it is used" : why;
      result.regions.push_back(std::move(report));
      continue;
    }
    report.source = *g;
    CostReport before = predict(*g, s.target);
    report.kernels_before = before.kernel_launches();
    report.predicted_before_s = before.total_s;
    Pending p{i, *g, print_graph(*g, false), "", s.specialized.at(r.function)};
    result.regions.push_back(std::move(report));
    auto same = by_text.find(p.text);
    if (same != by_text.end()) {
      s.names[i] = same->second;
      result.regions[i].shared = true;
      continue;
    }
    s.names[i] = fmt::format("{}.r{}", r.function, i);
    by_text[p.text] = s.names[i];
    p.key = RegionCache::key(p.text, s.options.search.target, p.binding, s.options.search);
    const size_t warned = result.warnings.size();
    std::optional<CachedRegion> hit = cache.load(p.key, result.warnings);
    for (size_t w = warned; w < result.warnings.size(); ++w)
      s.say("warning: " + result.warnings[w]);
    if (!s.options.search_regions) {
      result.regions[i].origin = "input";
      found.emplace_back(i, std::move(p.graph));
    } else if (hit && !trusted(*hit, p)) {
      to_search.push_back(std::move(p));
    } else if (hit) {
      CompiledRegion& rep = result.regions[i];
      rep.cache_hit = true;
      rep.origin = hit->origin;
      rep.stop = hit->stop;
      rep.search_s = hit->search_s;
      ++result.cache_hits;
      // An entry no faster than the region itself (a weft before this rule stored the expanded
      // input program of a cut-short search) serves the region as it is.
      if (predict(hit->graph, s.target).total_s < rep.predicted_before_s) {
        found.emplace_back(i, std::move(hit->graph));
      } else {
        rep.origin = "input";
        found.emplace_back(i, std::move(p.graph));
      }
    } else {
      to_search.push_back(std::move(p));
    }
  }
  return to_search;
}

// Searches the regions the cache did not serve, each with an equal share of the compile's time
// left, and stores what each found.
void search_regions(CompileState& s, RegionCache& cache, std::vector<Pending>& to_search,
                    std::vector<std::pair<size_t, Graph>>& found) {
  for (size_t k = 0; k < to_search.size(); ++k) {
    Pending& p = to_search[k];
    CompiledRegion& rep = s.result.regions[p.region];
    SearchConfig config = s.options.search;
    config.top_k = 1;
    config.time_budget_s =
        s.budget.share(static_cast<int>(to_search.size() - k), kLeastRegionBudgetS).time_s();
    s.say(fmt::format("region {}/{} ({}: {}): {} kernel{} before, searching for {:.1f} s", k + 1,
                      to_search.size(), rep.function, fmt::join(rep.vars, " "), rep.kernels_before,
                      rep.kernels_before == 1 ? "" : "s", config.time_budget_s));
    CachedRegion best{p.graph, "input", "", 0};
    try {
      OptimizeResult r = optimize(p.graph, config);
      best.stop = stop_reason_name(r.stop);
      best.search_s = r.search_s + r.verify_s;
      s.result.stop = worse_stop(s.result.stop, r.stop);
      // The search's answer only when predicted faster than the region as it is: with its
      // composites expanded, the input program optimize falls back to (a run cut short by its
      // budget) takes more launches than the region itself.
      if (!r.top.empty() && r.top[0].predicted_s < rep.predicted_before_s) {
        best.graph = r.top[0].graph;
        best.origin = r.top[0].origin;
      }
    } catch (const UserError& e) {
      // The search cannot take this region on the target (e.g. too large for it): it stays
      // as it is, which is equivalent by construction.
      best.stop = fmt::format("not searched: {}", e.message());
    }
    ++s.result.searched;
    rep.origin = best.origin;
    rep.stop = best.stop;
    rep.search_s = best.search_s;
    cache.store(p.key, best);
    found.emplace_back(p.region, std::move(best.graph));
  }
}

// Each region's µGraph, from the cache or searched, added to the module (sorted by name, so the
// module's text does not depend on the order searches finished in).
void superoptimize_step(CompileState& s) {
  RegionCache cache(s.options.search_regions ? s.options.cache_dir : "");
  std::vector<std::pair<size_t, Graph>> found;  // region -> its best µGraph
  std::vector<Pending> to_search = look_up_regions(s, cache, found);
  search_regions(s, cache, to_search, found);
  ModelCompileResult& result = s.result;
  for (auto& [i, graph] : found) {
    graph.name = s.names[i];
    CostReport after = predict(graph, s.target);
    result.regions[i].ugraph = s.names[i];
    result.regions[i].kernels_after = after.kernel_launches();
    result.regions[i].predicted_after_s = after.total_s;
    s.module.ugraphs.push_back(
        UGraphDef{s.names[i], "", std::make_shared<const Graph>(std::move(graph)), SourceLoc{}});
  }
  std::map<std::string, const CompiledRegion*> by_name;
  for (const CompiledRegion& r : result.regions)
    if (!r.ugraph.empty()) by_name[r.ugraph] = &r;
  for (size_t i = 0; i < s.regions.size(); ++i) {
    CompiledRegion& rep = result.regions[i];
    if (!rep.shared) continue;
    const CompiledRegion& first = *by_name.at(s.names[i]);
    rep.ugraph = s.names[i];
    rep.kernels_after = first.kernels_after;
    rep.predicted_after_s = first.predicted_after_s;
    rep.origin = first.origin;
  }
  std::sort(s.module.ugraphs.begin(), s.module.ugraphs.end(),
            [](const UGraphDef& a, const UGraphDef& b) { return a.name < b.name; });
}

// Each region replaced by a call of its µGraph; the module deduced and checked.
void replace_step(CompileState& s) {
  s.module = replace_regions(s.module, s.regions, s.names);
  deduce_module(s.module, s.prover);
  check_module(s.module, s.prover);
}

struct Step {
  const char* name;
  void (*run)(CompileState&);
};

// One step a line, as the pipeline reads.
// clang-format off
const Step kSteps[] = {
    {"expand", expand_step},
    {"rewrite", rewrite_step},
    {"fold", fold_step},
    {"specialize", specialize_step},
    {"refold", refold_step},
    {"fuse", fuse_step},
    {"partition", partition_step},
    {"superoptimize", superoptimize_step},
    {"replace", replace_step},
};
// clang-format on

// The module's text after `step`; after partition (which leaves the module as it is) its regions
// follow as comments, so the text still parses as a module.
std::string step_text(const CompileState& s, const std::string& step) {
  std::string text = print_module(s.module);
  if (step != "partition") return text;
  text += "\n# regions (weft model partition's listing):\n";
  std::string listing = regions_str(s.regions);
  size_t at = 0;
  while (at < listing.size()) {
    size_t end = listing.find('\n', at);
    if (end == std::string::npos) end = listing.size();
    text += "# " + listing.substr(at, end - at) + "\n";
    at = end + 1;
  }
  return text;
}

}  // namespace

const std::vector<std::string>& model_compile_steps() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Step& step : kSteps) n.push_back(step.name);
    return n;
  }();
  return names;
}

ModelCompileResult compile_model(const Module& module, SymProver& prover,
                                 const ModelCompileOptions& options) {
  const auto& names = model_compile_steps();
  if (!options.stop_after.empty() &&
      std::find(names.begin(), names.end(), options.stop_after) == names.end())
    throw UserError(fmt::format("unknown model compile step '{}' (steps: {})", options.stop_after,
                                fmt::join(names, ", ")));
  CompileState s{options,
                 prover,
                 target_by_name(options.search.target),
                 Budget({.time_s = options.search.time_budget_s}),
                 module,
                 {},
                 {},
                 {},
                 {}};
  for (const Step& step : kSteps) {
    step.run(s);
    if (options.stop_after == step.name) {
      s.result.step_text = step_text(s, step.name);
      break;
    }
  }
  s.result.module = std::move(s.module);
  s.result.wall_s = s.budget.elapsed_s();
  return std::move(s.result);
}

}  // namespace weft
