// The model compile pipeline: expand, specialize, partition, superoptimize or look up each
// region, replace, check.
#include "driver/compile_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include "cost/cost_model.h"
#include "driver/optimize.h"
#include "driver/region_cache.h"
#include "ir/printer.h"
#include "model/deduce.h"
#include "model/expand.h"
#include "search/stats.h"

namespace weft {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A region on its way through the pipeline.
struct Pending {
  size_t region = 0;  // index into the result's regions
  Graph graph;        // the region's µGraph, named "region"
  std::string text;   // its canonical text
  std::string key;    // its cache key
  SymBinding binding;
};

}  // namespace

ModelCompileResult compile_model(const Module& module, SymProver& prover,
                                 const ModelCompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  ModelCompileResult result;
  const std::string& target_name = options.search.target;
  const Target& target = target_by_name(target_name);

  // Steps 1-2: composites expanded, entry functions specialized.
  Module expanded = expand_composites(module, prover);
  SpecializeResult spec = specialize_module(expanded, options.bindings, prover);
  result.specializations = spec.specializations;
  result.skipped = spec.skipped;
  std::map<std::string, const Specialization*> specialized;
  for (const Specialization& s : result.specializations) specialized[s.name] = &s;

  // Step 3: the regions of the specialized functions (the generic ones stay as they are).
  PartitionOptions popt;
  popt.max_region_ops = options.max_region_ops;
  popt.search = options.search;
  std::vector<ModelRegion> regions;
  for (ModelRegion& r : partition_module(spec.module, popt))
    if (specialized.count(r.function)) regions.push_back(std::move(r));

  // Step 4: each region's µGraph, from the cache or searched.
  RegionCache cache(options.search_regions ? options.cache_dir : "");
  std::vector<std::string> names(regions.size());
  std::map<std::string, std::string> by_text;  // region text -> its µGraph's name
  std::vector<Pending> to_search;
  std::vector<std::pair<size_t, Graph>> found;  // region -> its best µGraph
  // A cache entry is a file anyone may have written (or an older weft): its µGraph is verified
  // against the region before use, as the search's own results are. One that fails is reported
  // and the region is searched again (and its entry rewritten).
  auto trusted = [&](const CachedRegion& hit, const Pending& p) {
    const VerifiedRecord v = verify_result(p.graph, hit.graph, options.search);
    if (v.equivalent && v.numerically_ok) return true;
    const std::string why = fmt::format(
        "cache entry {} is not verified equivalent to its region ({}); searching again",
        cache.path(p.key), !v.equivalent ? v.detail : "not numerically acceptable in f32");
    result.warnings.push_back(why);
    say("warning: " + why);
    return false;
  };
  for (size_t i = 0; i < regions.size(); ++i) {
    const ModelRegion& r = regions[i];
    const Function* f = spec.module.find_function(r.function);
    CompiledRegion report;
    report.function = r.function;
    for (int b : r.bindings)
      report.vars.push_back(
          f->blocks[static_cast<size_t>(r.block)].bindings[static_cast<size_t>(b)].var);
    std::string why;
    std::optional<Graph> g = region_graph(spec.module, r, "region", &why);
    if (!g || r.outputs.empty()) {
      report.skipped = g ? "no value of it is used" : why;
      result.regions.push_back(std::move(report));
      continue;
    }
    report.source = *g;
    CostReport before = predict(*g, target);
    report.kernels_before = before.kernel_launches();
    report.predicted_before_s = before.total_s;
    Pending p{i, *g, print_graph(*g, false), "", specialized.at(r.function)->binding};
    result.regions.push_back(std::move(report));
    auto same = by_text.find(p.text);
    if (same != by_text.end()) {
      names[i] = same->second;
      result.regions[i].shared = true;
      continue;
    }
    names[i] = fmt::format("{}.r{}", r.function, i);
    by_text[p.text] = names[i];
    p.key = RegionCache::key(p.text, target_name, p.binding, options.search);
    const size_t warned = result.warnings.size();
    std::optional<CachedRegion> hit = cache.load(p.key, result.warnings);
    for (size_t w = warned; w < result.warnings.size(); ++w) say("warning: " + result.warnings[w]);
    if (!options.search_regions) {
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
      if (predict(hit->graph, target).total_s < rep.predicted_before_s) {
        found.emplace_back(i, std::move(hit->graph));
      } else {
        rep.origin = "input";
        found.emplace_back(i, std::move(p.graph));
      }
    } else {
      to_search.push_back(std::move(p));
    }
  }
  const double budget = options.search.time_budget_s;
  for (size_t k = 0; k < to_search.size(); ++k) {
    Pending& p = to_search[k];
    CompiledRegion& rep = result.regions[p.region];
    SearchConfig config = options.search;
    config.top_k = 1;
    const double spent = seconds_since(start);
    config.time_budget_s =
        budget > 0 ? std::max(0.05, (budget - spent) / static_cast<double>(to_search.size() - k))
                   : 0;
    say(fmt::format("region {}/{} ({}: {}): {} kernel{} before, searching for {:.1f} s", k + 1,
                    to_search.size(), rep.function, fmt::join(rep.vars, " "), rep.kernels_before,
                    rep.kernels_before == 1 ? "" : "s", config.time_budget_s));
    CachedRegion best{p.graph, "input", "", 0};
    try {
      OptimizeResult r = optimize(p.graph, config);
      best.stop = search_stop_name(r.stop);
      best.search_s = r.search_s + r.verify_s;
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
    ++result.searched;
    rep.origin = best.origin;
    rep.stop = best.stop;
    rep.search_s = best.search_s;
    cache.store(p.key, best);
    found.emplace_back(p.region, std::move(best.graph));
  }

  // Step 5: the µGraphs in the module, the regions replaced.
  Module out = std::move(spec.module);
  for (auto& [i, graph] : found) {
    graph.name = names[i];
    CostReport after = predict(graph, target);
    result.regions[i].ugraph = names[i];
    result.regions[i].kernels_after = after.kernel_launches();
    result.regions[i].predicted_after_s = after.total_s;
    out.ugraphs.push_back(
        UGraphDef{names[i], "", std::make_shared<const Graph>(std::move(graph)), SourceLoc{}});
  }
  std::map<std::string, const CompiledRegion*> by_name;
  for (const CompiledRegion& r : result.regions)
    if (!r.ugraph.empty()) by_name[r.ugraph] = &r;
  for (size_t i = 0; i < regions.size(); ++i) {
    CompiledRegion& rep = result.regions[i];
    if (!rep.shared) continue;
    const CompiledRegion& first = *by_name.at(names[i]);
    rep.ugraph = names[i];
    rep.kernels_after = first.kernels_after;
    rep.predicted_after_s = first.predicted_after_s;
    rep.origin = first.origin;
  }
  // Sorted by name so the module's text does not depend on the order searches finished in.
  std::sort(out.ugraphs.begin(), out.ugraphs.end(),
            [](const UGraphDef& a, const UGraphDef& b) { return a.name < b.name; });
  out = replace_regions(out, regions, names);
  deduce_module(out, prover);
  check_module(out, prover);
  result.module = std::move(out);
  result.wall_s = seconds_since(start);
  return result;
}

}  // namespace weft
