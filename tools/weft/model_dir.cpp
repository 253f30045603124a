// `weft compile MODEL.wmod -o DIR`, `weft run DIR` and `weft bench DIR`: the compiled-model
// directory (model.wmod, original.wmod, ugraphs/, code/, summary.json) and what runs on it.
#include "tools/weft/model_dir.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "driver/compile.h"
#include "ir/printer.h"
#include "model/compile.h"
#include "model/deduce.h"
#include "model/parser.h"
#include "model/printer.h"
#include "model/run_io.h"
#include "onnx/import.h"
#include "runtime/build_cache.h"
#include "runtime/timing.h"

namespace weft::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* kCompiledModule = "model.wmod";
constexpr const char* kOriginalModule = "original.wmod";
constexpr const char* kSummary = "summary.json";
// An imported ONNX model's weights (main's parameters after the graph inputs) and its names:
// users give inputs and get outputs by the ONNX graph's names.
constexpr const char* kWeights = "weights.npz";
constexpr const char* kOnnxNames = "onnx_names.json";

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw UserError(fmt::format("cannot write {}", path.string()));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("cannot read {}", path.string()));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double us(double s) {
  return std::round(s * 1e9) / 1e3;
}

// The module with every µGraph in DIR/ugraphs/NAME.weft (written here), so the directory
// stands on its own.
Module with_ugraph_files(Module m, const fs::path& dir) {
  fs::create_directories(dir / "ugraphs");
  for (UGraphDef& u : m.ugraphs) {
    u.path = "ugraphs/" + u.name + ".weft";
    write_file(dir / u.path, print_graph(*u.graph, false));
  }
  return m;
}

nlohmann::ordered_json binding_json(const SymBinding& b) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, value] : b) j[name] = value;
  return j;
}

nlohmann::ordered_json summary_json(const ModelCompileArgs& args, const ModelCompileResult& r,
                                    const std::vector<SymBinding>& bindings) {
  nlohmann::ordered_json j;
  j["model"] = args.file;
  j["target"] = args.target;
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
  j["totals"] = {{"regions", r.regions.size()},
                 {"compiled", compiled},
                 {"kernels_before", before},
                 {"kernels_after", after},
                 {"predicted_before_us", us(before_s)},
                 {"predicted_after_us", us(after_s)},
                 {"cache_hits", r.cache_hits},
                 {"searched", r.searched},
                 {"note",
                  "per region of the specialized functions, each counted once (not weighted by "
                  "calls); before: each table operator its own kernel; predicted by the target's "
                  "cost model"}};
  j["compile_s"] = std::round(r.wall_s * 1e3) / 1e3;
  j["warnings"] = r.warnings;
  return j;
}

std::vector<SymBinding> summary_bindings(const fs::path& dir) {
  std::vector<SymBinding> out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(dir / kSummary));
    for (const auto& b : j.at("bindings")) {
      SymBinding binding;
      for (const auto& [name, value] : b.items()) binding[name] = value.get<int64_t>();
      out.push_back(binding);
    }
  } catch (const nlohmann::json::exception& e) {
    throw UserError(SourceLoc{(dir / kSummary).string()}, fmt::format("bad summary: {}", e.what()));
  }
  return out;
}

}  // namespace

SymBinding parse_binding(const std::string& text, const Module& m) {
  SymBinding out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = item.find('=');
    std::string name = eq == std::string::npos ? item : item.substr(0, eq);
    const SymVar* var = m.syms.find(name);
    if (eq == std::string::npos || !var)
      throw UserError(fmt::format("--bind: '{}' is not NAME=VALUE for a declared variable", item));
    int64_t value = 0;
    std::string digits = item.substr(eq + 1);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || value < var->lo() ||
        (var->hi() && value > *var->hi()))
      throw UserError(fmt::format("--bind: {} = '{}' is not an integer within {}", name, digits,
                                  var->decl_str()));
    out[name] = value;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// "--bound n=512": an upper bound for a symbolic variable made from an ONNX dim_param.
void parse_bound(const std::string& text, OnnxImportOptions& options) {
  size_t eq = text.find('=');
  int64_t value = 0;
  std::string digits = eq == std::string::npos ? "" : text.substr(eq + 1);
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (eq == std::string::npos || eq == 0 || ec != std::errc() ||
      ptr != digits.data() + digits.size() || value < 1)
    throw UserError(fmt::format("--bound: '{}' is not NAME=N with N >= 1", text));
  options.bounds[text.substr(0, eq)] = value;
}

bool is_model_file(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  return ext == ".wmod" || ext == ".onnx";
}

bool is_compiled_model_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / kCompiledModule, ec);
}

int compile_model_file(const ModelCompileArgs& args) {
  SymProver prover;
  // The one place a model format is chosen: .onnx goes through the importer (onnx/import.h),
  // whose weights and names travel in the folder.
  std::optional<ImportedModel> imported;
  Module m;
  if (is_onnx_path(args.file)) {
    OnnxImportOptions io;
    for (const std::string& b : args.bounds) parse_bound(b, io);
    imported = import_onnx(args.file, io);
    m = imported->module;
  } else {
    m = load_module(args.file, prover);
  }
  check_module(m, prover);
  std::vector<SymBinding> bindings;
  for (const std::string& b : args.binds) bindings.push_back(parse_binding(b, m));
  if (bindings.empty())
    throw UserError("give the shapes to compile for with --bind NAME=VALUE,... (one per binding)");
  const Target& target = target_by_name(args.target);

  ModelCompileOptions options;
  options.bindings = bindings;
  options.search.target = args.target;
  options.search.time_budget_s = args.time_budget_s;
  options.search.state_budget = args.state_budget;
  options.max_region_ops = args.max_region_ops;
  if (!args.no_cache)
    options.cache_dir = args.cache_dir.empty()
                            ? (fs::path(default_cache_directory("")) / "regions").string()
                            : args.cache_dir;
  options.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  ModelCompileResult r = compile_model(m, prover, options);

  fs::path dir(args.out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  Module compiled = with_ugraph_files(r.module, dir);
  write_file(dir / kCompiledModule, print_module(compiled));
  Module original = m;
  for (UGraphDef& u : original.ugraphs) u.path.clear();  // inline: the folder stands alone
  write_file(dir / kOriginalModule, print_module(original));
  fs::create_directories(dir / "code");
  int built = 0;
  std::string not_built;
  for (const UGraphDef& u : compiled.ugraphs) {
    CompiledCode code = compile_graph(*u.graph, target);
    if (!code.has_code) continue;
    write_file(dir / "code" / (u.name + code.source_extension), code.source);
    if (args.no_build) continue;
    BuildReport b = build_code(code);
    if (b.built)
      ++built;
    else
      not_built = b.skipped;
  }
  if (imported) {
    write_npz((dir / kWeights).string(), imported->weights);
    nlohmann::ordered_json names;
    names["inputs"] = nlohmann::ordered_json::array();
    names["outputs"] = nlohmann::ordered_json::array();
    for (const OnnxName& n : imported->inputs)
      names["inputs"].push_back({{"onnx", n.onnx}, {"wmod", n.wmod}});
    for (const OnnxName& n : imported->outputs)
      names["outputs"].push_back({{"onnx", n.onnx}, {"wmod", n.wmod}});
    write_file(dir / kOnnxNames, names.dump(1) + "\n");
  }
  nlohmann::ordered_json summary = summary_json(args, r, bindings);
  write_file(dir / kSummary, summary.dump(1) + "\n");

  const auto& t = summary["totals"];
  fmt::print("{}: {} specialization{}, {} region{} ({} compiled), kernels {} -> {}\n", args.file,
             r.specializations.size(), r.specializations.size() == 1 ? "" : "s", r.regions.size(),
             r.regions.size() == 1 ? "" : "s", t["compiled"].get<int>(),
             t["kernels_before"].get<int>(), t["kernels_after"].get<int>());
  fmt::print("predicted on {} (regions only): {:.2f} us per-operator -> {:.2f} us compiled\n",
             target.name, t["predicted_before_us"].get<double>(),
             t["predicted_after_us"].get<double>());
  fmt::print("cache: {} hit{}, {} searched; compile {:.2f} s\n", r.cache_hits,
             r.cache_hits == 1 ? "" : "s", r.searched, r.wall_s);
  for (const std::string& s : r.skipped) fmt::print("not specialized: {}\n", s);
  if (!args.no_build)
    fmt::print("code: {} of {} µGraph{} built{}\n", built, compiled.ugraphs.size(),
               compiled.ugraphs.size() == 1 ? "" : "s",
               not_built.empty() ? "" : fmt::format(" ({})", not_built));
  fmt::print("wrote {}\n", dir.string());
  return 0;
}

namespace {

struct LoadedDir {
  SymProver prover;
  Module compiled, original;
};

std::unique_ptr<LoadedDir> load_dir(const std::string& dir) {
  auto d = std::make_unique<LoadedDir>();
  d->compiled = load_module((fs::path(dir) / kCompiledModule).string(), d->prover);
  d->original = load_module((fs::path(dir) / kOriginalModule).string(), d->prover);
  return d;
}

// The arguments of a compiled folder's functions: the user's arrays (by ONNX input name for an
// imported model) and the weights the import wrote.
NpzArrays model_arguments(const std::string& dir, const std::string& inputs) {
  NpzArrays in = read_npz(inputs);
  fs::path names = fs::path(dir) / kOnnxNames;
  if (fs::exists(names)) {
    for (const auto& e : nlohmann::json::parse(read_file(names))["inputs"]) {
      std::string onnx = e["onnx"], wmod = e["wmod"];
      auto it = in.find(onnx);
      if (onnx == wmod || it == in.end()) continue;
      NpyArray a = it->second;
      in.erase(it);
      in.emplace(wmod, a);
    }
  }
  fs::path weights = fs::path(dir) / kWeights;
  if (fs::exists(weights))
    for (auto& [name, a] : read_npz(weights.string())) in.emplace(name, a);
  return in;
}

// The result's arrays, named by the ONNX graph's outputs for an imported model, and the element
// type each is written as (by the function's result type).
std::map<std::string, Tensor<double>> named_results(const std::string& dir, const VmValue& v,
                                                    const Function& fn,
                                                    std::map<std::string, NpyElement>& elements) {
  auto arrays = result_arrays(v);
  elements = result_elements(fn.ret);
  fs::path names = fs::path(dir) / kOnnxNames;
  if (!fs::exists(names)) return arrays;
  auto outputs = nlohmann::json::parse(read_file(names))["outputs"];
  std::map<std::string, Tensor<double>> out;
  std::map<std::string, NpyElement> renamed;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string key = outputs.size() == 1 ? "result" : fmt::format("result.{}", i);
    auto it = arrays.find(key);
    if (it == arrays.end())
      throw UserError(SourceLoc{dir}, fmt::format("{} has no output {}", dir, i));
    std::string onnx = outputs[i]["onnx"].get<std::string>();
    out[onnx] = it->second;
    if (auto e = elements.find(key); e != elements.end()) renamed[onnx] = e->second;
  }
  elements = std::move(renamed);
  return out;
}

VmOptions compiled_options() {
  VmOptions o;
  o.ugraph_executor = UGraphExecutor::cpu;
  return o;
}

}  // namespace

int run_compiled_model(const std::string& dir, const std::string& inputs,
                       const std::string& outputs, const std::string& function) {
  auto d = load_dir(dir);
  const Function& fn = function_to_run(d->compiled, function, SourceLoc{dir});
  auto args = arguments_from_npz(fn, model_arguments(dir, inputs), inputs);
  Vm vm(d->compiled, compiled_options());
  vm.compile_ugraphs();
  std::map<std::string, NpyElement> elements;
  auto arrays = named_results(dir, vm.run(function, args), fn, elements);
  write_npz(outputs, arrays, elements);
  for (const auto& [name, t] : arrays) std::cout << name << ": " << shape_str(t.shape) << "\n";
  return 0;
}

int bench_compiled_model(const std::string& dir, const std::vector<std::string>& inputs,
                         const std::string& function, int warmup, int reps) {
  if (reps < 1 || warmup < 0) throw UserError("--reps must be at least 1, --warmup at least 0");
  auto d = load_dir(dir);
  // The per-operator CPU baseline: every table operator its own compiled kernel, unsearched.
  ModelCompileOptions per_op;
  per_op.bindings = summary_bindings(dir);
  per_op.search.target = "cpu";
  per_op.max_region_ops = 1;
  per_op.search_regions = false;
  Module per_operator = compile_model(d->original, d->prover, per_op).module;
  Vm interp(d->original);
  Vm per_op_vm(per_operator, compiled_options());
  Vm compiled(d->compiled, compiled_options());
  per_op_vm.compile_ugraphs();
  compiled.compile_ugraphs();
  fmt::print("{}: CPU wall time of `{}` through the VM (median of {} after {} warm-up)\n", dir,
             function, reps, warmup);
  int rc = 0;
  for (const std::string& in : inputs) {
    const Function& fn = function_to_run(d->original, function, SourceLoc{dir});
    auto args = arguments_from_npz(fn, model_arguments(dir, in), in);
    auto time = [&](Vm& vm, VmValue& out) {
      return time_runs([&] { out = vm.run(function, args); }, warmup, reps);
    };
    VmValue a, b, c;
    Timing ta = time(interp, a), tb = time(per_op_vm, b), tc = time(compiled, c);
    auto ra = result_arrays(a), rc_arrays = result_arrays(c);
    double worst = 0;
    for (const auto& [name, t] : ra) {
      const Tensor<double>& u = rc_arrays.at(name);
      double scale = 0;
      for (double x : t.data) scale = std::max(scale, std::abs(x));
      for (size_t i = 0; i < t.data.size(); ++i)
        worst = std::max(worst, std::abs(t.data[i] - u.data[i]) / std::max(scale, 1e-30));
    }
    bool ok = worst <= 1e-4;
    if (!ok) rc = 3;
    SymBinding at;
    for (size_t i = 0; i < fn.params.size(); ++i)
      vm_match(fn.params[i].type, args[i], at, fn.params[i].name, fn.loc);
    bool compiled_here = false;
    for (const SymBinding& b : per_op.bindings) {
      bool all = true;
      for (const auto& [name, value] : at) {
        auto it = b.find(name);
        all = all && it != b.end() && it->second == value;
      }
      compiled_here = compiled_here || all;
    }
    fmt::print(
        "{} ({}{}):\n", in, binding_str(at),
        compiled_here ? "" : "; not a compiled binding: every variant runs the original body");
    fmt::print("  uncompiled, per-operator interpreter   {:10.3f} ms\n", ta.median_s * 1e3);
    fmt::print("  uncompiled, per-operator CPU kernels   {:10.3f} ms\n", tb.median_s * 1e3);
    fmt::print(
        "  compiled (superoptimized regions)      {:10.3f} ms  ({:.2f}x over per-operator "
        "CPU kernels)\n",
        tc.median_s * 1e3, tb.median_s / tc.median_s);
    fmt::print("  outputs vs the uncompiled module: scaled error {:.3g} ({})\n", worst,
               ok ? "within 1e-4" : "DIFFER");
  }
  return rc;
}

}  // namespace weft::cli
