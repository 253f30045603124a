// Compiling a model file into a directory: driver/compile_model over the loaded module, then every
// file the directory holds (docs/model-compile.md lists them).
#include "driver/compile_to_dir.h"

#include <fmt/format.h>

#include <fmt/ranges.h>
#include <algorithm>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "driver/compile.h"
#include "exec/npz.h"
#include "exec/run_io.h"
#include "ir/printer.h"
#include "model/printer.h"
#include "model/specialize.h"
#include "rewrite/default_rules.h"
#include "runtime/build_cache.h"

namespace weft {
namespace fs = std::filesystem;

void model_dir::write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw UserError(fmt::format("cannot write {}", path));
}

namespace {

using model_dir::write_text;

double us(double s) {
  return std::round(s * 1e9) / 1e3;
}

// The module with every µGraph in DIR/ugraphs/NAME.weft (written here), so the directory
// stands on its own.
Module with_ugraph_files(Module m, const fs::path& dir) {
  fs::create_directories(dir / "ugraphs");
  for (UGraphDef& u : m.ugraphs) {
    u.path = "ugraphs/" + u.name + ".weft";
    write_text((dir / u.path).string(), print_graph(*u.graph, false));
  }
  return m;
}

nlohmann::ordered_json binding_json(const SymBinding& b) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, value] : b) j[name] = value;
  return j;
}

nlohmann::ordered_json summary_json(const std::string& file, const std::string& target,
                                    const ModelCompileResult& r,
                                    const std::vector<SymBinding>& bindings) {
  nlohmann::ordered_json j;
  j["model"] = file;
  // The path as given is relative to where `weft compile` ran: its absolute form lets `weft bench
  // DIR --peer onnxruntime` find the model from anywhere.
  j["model_path"] = std::filesystem::absolute(file).lexically_normal().string();
  j["target"] = target;
  j["bindings"] = nlohmann::ordered_json::array();
  for (const SymBinding& b : bindings) j["bindings"].push_back(binding_json(b));
  j["specializations"] = nlohmann::ordered_json::array();
  for (const Specialization& s : r.specializations)
    j["specializations"].push_back({{"function", s.function},
                                    {"binding", binding_json(s.binding)},
                                    {"name", s.name},
                                    {"entry", s.entry}});
  j["not_specialized"] = r.skipped;
  int before = 0, after = 0, compiled = 0;
  double before_s = 0, after_s = 0;
  j["regions"] = nlohmann::ordered_json::array();
  for (const CompiledRegion& c : r.regions) {
    nlohmann::ordered_json e;
    e["function"] = c.function;
    e["bindings"] = c.vars;
    if (!c.skipped.empty()) {
      e["not_compiled"] = c.skipped;
      j["regions"].push_back(e);
      continue;
    }
    ++compiled;
    before += c.kernels_before;
    after += c.kernels_after;
    before_s += c.predicted_before_s;
    after_s += c.predicted_after_s;
    e["ugraph"] = c.ugraph;
    e["kernels_before"] = c.kernels_before;
    e["kernels_after"] = c.kernels_after;
    e["predicted_before_us"] = us(c.predicted_before_s);
    e["predicted_after_us"] = us(c.predicted_after_s);
    e["origin"] = c.origin;
    e["stop"] = c.stop;
    e["cache_hit"] = c.cache_hit;
    e["shared"] = c.shared;
    e["search_s"] = std::round(c.search_s * 1e3) / 1e3;
    j["regions"].push_back(e);
  }
  j["rewrite"] = nlohmann::ordered_json::array();
  for (const FunctionRewrite& f : r.rewrites.functions) {
    nlohmann::ordered_json e;
    e["function"] = f.function;
    e["mode"] = rewrite_mode_name(f.mode);
    e["rewrites"] = nlohmann::ordered_json::array();
    for (const RewriteStep& st : f.steps)
      e["rewrites"].push_back({{"rule", st.rule}, {"reversed", st.reverse}, {"at", st.at}});
    e["kernels_before"] = f.kernels_before;
    e["kernels_after"] = f.kernels_after;
    e["predicted_before_us"] = us(f.before_s);
    e["predicted_after_us"] = us(f.after_s);
    if (f.mode == RewriteMode::egraph) {
      e["enodes"] = f.graphs;
      e["eclasses"] = f.classes;
      e["iterations"] = f.iterations;
    } else {
      e["graphs"] = f.graphs;
    }
    e["stop"] = stop_reason_name(f.stop);
    if (!f.rejected.empty()) e["not_used"] = f.rejected;
    e["search_s"] = f.search_s;
    j["rewrite"].push_back(e);
  }
  j["folded"] = {{"bindings", r.folded_bindings}, {"weights", r.folded.size()}};
  j["fused_convs"] = nlohmann::ordered_json::array();
  for (const ConvFusion& f : r.conv_fusions)
    j["fused_convs"].push_back({{"function", f.function},
                                {"conv", f.conv},
                                {"result", f.result},
                                {"bindings", f.bindings}});
  j["totals"] = {{"regions", r.regions.size()},
                 {"compiled", compiled},
                 {"kernels_before", before},
                 {"kernels_after", after},
                 {"predicted_before_us", us(before_s)},
                 {"predicted_after_us", us(after_s)},
                 {"cache_hits", r.cache_hits},
                 {"searched", r.searched},
                 {"stop", stop_reason_name(r.stop)},
                 {"note",
                  "per region of the specialized functions, each counted once (not weighted by "
                  "calls); before: each table operator its own kernel; predicted by the target's "
                  "cost model"}};
  j["compile_s"] = std::round(r.wall_s * 1e3) / 1e3;
  j["warnings"] = r.warnings;
  return j;
}

// The symbolic variables of the module's entry functions (those no function calls), in order.
std::vector<std::string> entry_variables(const Module& m) {
  std::set<std::string> called, vars;
  for (const Function& f : m.functions)
    for (const Block& blk : f.blocks)
      for (const Binding& b : blk.bindings)
        if (b.call.kind == CallKind::func) called.insert(b.call.callee);
  for (const Function& f : m.functions)
    if (!called.count(f.name))
      for (const std::string& v : function_variables(f)) vars.insert(v);
  return {vars.begin(), vars.end()};
}

// "batch=N,seq=N (one --bind per shape)": the flag's form for these variables.
std::string example_binding(const std::vector<std::string>& vars) {
  std::vector<std::string> items;
  for (const std::string& v : vars) items.push_back(fmt::format("{}=N", v));
  return fmt::format("{} (one --bind per shape)", fmt::join(items, ","));
}

// An imported model's ONNX input and output names with the parameter names they became.
nlohmann::ordered_json onnx_names_json(const ImportedModel& imported) {
  nlohmann::ordered_json names;
  names["inputs"] = nlohmann::ordered_json::array();
  names["outputs"] = nlohmann::ordered_json::array();
  for (const OnnxName& n : imported.inputs)
    names["inputs"].push_back({{"onnx", n.onnx}, {"wmod", n.wmod}});
  for (const OnnxName& n : imported.outputs)
    names["outputs"].push_back({{"onnx", n.onnx}, {"wmod", n.wmod}});
  return names;
}

}  // namespace

ModelDirReport compile_model_to_dir(const ModelFile& model, SymProver& prover,
                                    const std::string& out_dir, const ModelDirOptions& options) {
  for (const SymBinding& b : options.bindings) check_binding(b, model.module);
  const Target& target = target_by_name(options.target);

  ModelCompileOptions mco;
  mco.bindings = options.bindings;
  ModelDirReport report;
  if (mco.bindings.empty()) {
    const std::vector<std::string> vars = entry_variables(model.module);
    if (vars.empty())
      mco.bindings.push_back({});  // fixed shapes: the one binding there is
    else
      report.unspecialized_note = fmt::format(
          "not specialized: {} has symbolic dims ({}), so {} runs every shape on the per-operator "
          "path; add superoptimized shapes with --bind {}",
          model.path, fmt::join(vars, ", "), out_dir, example_binding(vars));
  }
  mco.search.target = options.target;
  mco.search.time_budget_s = options.time_budget_s;
  mco.search.state_budget = options.state_budget;
  mco.max_region_ops = options.max_region_ops;
  mco.rewrite.mode = options.rewrite;
  mco.fuse_conv_epilogues = options.fuse;
  // The rewrite search's seconds come on top of the regions' (at most half as many).
  if (options.time_budget_s > 0)
    mco.rewrite.time_budget_s = std::min(mco.rewrite.time_budget_s, options.time_budget_s / 2);
  if (!options.rules.empty()) mco.rules = load_rules(options.rules);
  if (!options.no_cache)
    mco.cache_dir = options.cache_dir.empty()
                        ? (fs::path(default_cache_directory("")) / "regions").string()
                        : options.cache_dir;
  mco.progress = options.progress;
  if (model.imported) mco.constants = &model.imported->weights;
  mco.stop_after = options.stop_after;
  report.result = compile_model(model.module, prover, mco);
  const ModelCompileResult& r = report.result;
  if (!options.stop_after.empty()) return report;

  fs::path dir(out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  // Persistent-kernel plans of an earlier compile into this folder belong to that module: `weft
  // run DIR --megakernel` would run them on this one's weights (write_dir_megakernels writes
  // new ones).
  fs::remove_all(dir / "megakernel", ec);
  Module compiled = with_ugraph_files(r.module, dir);
  write_text((dir / model_dir::kCompiledModule).string(), print_module(compiled));
  Module original = model.module;
  for (UGraphDef& u : original.ugraphs) u.path.clear();  // inline: the folder stands alone
  write_text((dir / model_dir::kOriginalModule).string(), print_module(original));
  fs::create_directories(dir / "code");
  report.ugraphs = static_cast<int>(compiled.ugraphs.size());
  for (const UGraphDef& u : compiled.ugraphs) {
    CompiledCode code = compile_graph(*u.graph, target);
    if (!code.has_code) continue;
    write_text((dir / "code" / (u.name + code.source_extension)).string(), code.source);
    if (options.no_build) continue;
    BuildReport b = build_code(code);
    if (b.built)
      ++report.built;
    else
      report.not_built = b.skipped;
  }
  if (model.imported) {
    // The original module's weights and the compiled one's folded values, by parameter name.
    std::map<std::string, Tensor<double>> weights = model.imported->weights;
    for (const auto& [name, value] : r.folded) weights.emplace(name, value);
    std::map<std::string, NpyElement> elements = weight_elements(compiled, weights);
    elements.merge(weight_elements(model.imported->module, weights));
    write_npz((dir / model_dir::kWeights).string(), weights, elements);
    write_text((dir / model_dir::kOnnxNames).string(),
               onnx_names_json(*model.imported).dump(1) + "\n");
  }
  report.summary = summary_json(model.path, options.target, r, mco.bindings);
  write_text((dir / model_dir::kSummary).string(), report.summary.dump(1) + "\n");
  return report;
}

}  // namespace weft
