// Loading, running and timing a compiled model directory (driver/compile_to_dir.h wrote it).
#include "driver/compiled_dir.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/target.h"
#include "driver/compile_model.h"
#include "driver/compile_to_dir.h"
#include "exec/run_io.h"
#include "model/parser.h"

namespace weft {
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("cannot read {}", path.string()));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A JSON file of the directory; UserError at it when malformed.
nlohmann::json read_json(const fs::path& path, const char* what) {
  try {
    return nlohmann::json::parse(read_text(path));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(SourceLoc{path.string()}, fmt::format("bad {}: {}", what, e.what()));
  }
}

VmOptions compiled_options() {
  VmOptions o;
  o.ugraph_executor = UGraphExecutor::cpu;
  return o;
}

}  // namespace

bool is_compiled_model_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / model_dir::kCompiledModule, ec);
}

CompiledModelDir::CompiledModelDir(const std::string& dir) : dir_(dir) {
  fs::path d(dir);
  compiled_ = load_module((d / model_dir::kCompiledModule).string(), prover_);
  original_ = load_module((d / model_dir::kOriginalModule).string(), prover_);
  fs::path summary = d / model_dir::kSummary;
  nlohmann::json j = read_json(summary, "summary");
  try {
    for (const auto& b : j.at("bindings")) {
      SymBinding binding;
      for (const auto& [name, value] : b.items()) binding[name] = value.get<int64_t>();
      bindings_.push_back(binding);
    }
    target_ = j.at("target").get<std::string>();
    model_file_ = j.value("model", std::string());
    if (std::string absolute = j.value("model_path", std::string());
        !absolute.empty() && !fs::exists(model_file_))
      model_file_ = absolute;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(SourceLoc{summary.string()}, fmt::format("bad summary: {}", e.what()));
  }
  fs::path names = d / model_dir::kOnnxNames;
  if (fs::exists(names)) {
    nlohmann::json n = read_json(names, "ONNX names");
    try {
      for (const auto& e : n.at("inputs"))
        onnx_inputs_.emplace_back(e.at("onnx").get<std::string>(), e.at("wmod").get<std::string>());
      for (const auto& e : n.at("outputs"))
        onnx_outputs_.emplace_back(e.at("onnx").get<std::string>(),
                                   e.at("wmod").get<std::string>());
    } catch (const nlohmann::json::exception& e) {
      throw UserError(SourceLoc{names.string()}, fmt::format("bad ONNX names: {}", e.what()));
    }
  }
  fs::path weights = d / model_dir::kWeights;
  if (fs::exists(weights)) weights_ = read_npz(weights.string());
}

CompiledModelDir::~CompiledModelDir() = default;

std::vector<std::string> CompiledModelDir::input_names(const std::string& function) const {
  std::vector<std::string> out;
  for (const Param& p : function_to_run(compiled_, function, SourceLoc{dir_}).params) {
    if (weights_.count(p.name)) continue;
    std::string name = p.name;
    for (const auto& [onnx, wmod] : onnx_inputs_)
      if (wmod == p.name) name = onnx;
    out.push_back(name);
  }
  return out;
}

std::vector<std::string> CompiledModelDir::parameter_names(const std::string& function) const {
  std::vector<std::string> out;
  for (const Param& p : function_to_run(compiled_, function, SourceLoc{dir_}).params) {
    std::string name = p.name;
    for (const auto& [onnx, wmod] : onnx_inputs_)
      if (wmod == p.name) name = onnx;
    out.push_back(name);
  }
  return out;
}

std::vector<VmValue> CompiledModelDir::arguments(const std::string& function,
                                                 const NpzArrays& inputs, const std::string& where,
                                                 bool original) const {
  const Function& fn = function_to_run(original ? original_ : compiled_, function, SourceLoc{dir_});
  // The given arrays under the module's names (an ONNX input's under its parameter's).
  std::map<std::string, const NpyArray*> given;
  for (const auto& [name, a] : inputs) given.emplace(name, &a);
  for (const auto& [onnx, wmod] : onnx_inputs_) {
    auto it = given.find(onnx);
    if (onnx == wmod || it == given.end()) continue;
    const NpyArray* a = it->second;
    given.erase(it);
    given.emplace(wmod, a);
  }
  std::vector<VmValue> args;
  for (const Param& p : fn.params) {
    if (auto it = given.find(p.name); it != given.end()) {
      args.push_back(
          argument_value(p, *it->second, fmt::format("array '{}'", p.name), SourceLoc{where}));
      continue;
    }
    if (auto known = weight_by_param_.find(&p); known != weight_by_param_.end()) {
      args.push_back(known->second);
      continue;
    }
    const std::string what = fmt::format("array '{}'", p.name);
    auto w = weights_.find(p.name);
    if (w == weights_.end())
      throw UserError(SourceLoc{where},
                      fmt::format("no array '{}' for the parameter '{}' of '{}' (the archive "
                                  "holds {} arrays)",
                                  p.name, p.name, fn.name, inputs.size()));
    // The same weight tensors every call, made once (not copied per run): what the VM and the
    // CPU library prepare for a tensor (its f32 values, a convolution's weights in the
    // library's layout) is kept while the tensor lives.
    VmValue& kept = weight_values_[{original, p.name}];
    if (!kept.tensor()) kept = argument_value(p, w->second, what, SourceLoc{where});
    weight_by_param_.emplace(&p, kept);
    args.push_back(kept);
  }
  return args;
}

std::vector<VmValue> CompiledModelDir::zero_arguments(const std::string& function,
                                                      const SymBinding& binding) const {
  const Function& fn = function_to_run(compiled_, function, SourceLoc{dir_});
  NpzArrays in;
  for (const Param& p : fn.params) {
    if (weights_.count(p.name)) continue;
    auto value = [&](const SymExpr& e) {
      SymEvalResult r = try_evaluate(e, binding);
      if (!r.value)
        throw UserError(p.loc, fmt::format("{}: parameter {} has a dimension the binding does not "
                                           "give ({}); compile with --bind",
                                           dir_, p.name, e.str()));
      return *r.value;
    };
    if (p.type.kind == MTypeKind::integer) {
      in[p.name] =
          NpyArray{Tensor<double>(Shape{}, static_cast<double>(value(*p.type.value))), true};
      continue;
    }
    Shape shape;
    if (p.type.dims)
      for (const SymExpr& d : *p.type.dims) shape.push_back(value(d));
    in[p.name] = NpyArray{Tensor<double>(shape, 0.0), false};
  }
  for (const auto& [name, a] : weights_) in.emplace(name, a);
  return arguments_from_npz(fn, in, dir_);
}

std::map<std::string, Tensor<double>> CompiledModelDir::named_results(const VmValue& v) const {
  return named_arrays(result_arrays(v));
}

std::map<std::string, Tensor<double>> CompiledModelDir::named_arrays(
    std::map<std::string, Tensor<double>> arrays) const {
  if (onnx_outputs_.empty()) return arrays;
  std::map<std::string, Tensor<double>> out;
  for (size_t i = 0; i < onnx_outputs_.size(); ++i) {
    std::string key = onnx_outputs_.size() == 1 ? "result" : fmt::format("result.{}", i);
    auto it = arrays.find(key);
    if (it == arrays.end())
      throw UserError(SourceLoc{dir_}, fmt::format("{} has no output {}", dir_, i));
    out[onnx_outputs_[i].first] = it->second;
  }
  return out;
}

std::string CompiledModelDir::output_name(const std::string& key) const {
  for (size_t i = 0; i < onnx_outputs_.size(); ++i)
    if (key == (onnx_outputs_.size() == 1 ? "result" : fmt::format("result.{}", i)))
      return onnx_outputs_[i].first;
  return key;
}

std::map<std::string, NpyElement> CompiledModelDir::output_elements(
    const std::string& function) const {
  auto elements = result_elements(function_to_run(compiled_, function, SourceLoc{dir_}).ret);
  if (onnx_outputs_.empty()) return elements;
  std::map<std::string, NpyElement> out;
  for (size_t i = 0; i < onnx_outputs_.size(); ++i) {
    std::string key = onnx_outputs_.size() == 1 ? "result" : fmt::format("result.{}", i);
    if (auto e = elements.find(key); e != elements.end()) out[onnx_outputs_[i].first] = e->second;
  }
  return out;
}

DeviceVmOptions CompiledModelDir::device_options() const {
  DeviceVmOptions o;
  o.build = compiled_options().build;
  if (target_by_name(target_).kind == TargetKind::gpu) o.gpu_target = target_;
  return o;
}

DeviceVm& CompiledModelDir::device_vm(Backend backend) {
  if (!device_vm_ || device_vm_->backend() != backend) {
    resident_weights_.clear();
    device_vm_.reset();
    device_vm_ = std::make_unique<DeviceVm>(compiled_, backend, device_options());
  }
  return *device_vm_;
}

std::vector<DeviceValue> CompiledModelDir::device_arguments(const std::string& function,
                                                            const std::vector<VmValue>& args) {
  const Function& fn = function_to_run(device_vm_->vm().module(), function, SourceLoc{dir_});
  std::vector<DeviceValue> dev;
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& p = fn.params[i];
    if (!weights_.count(p.name)) {
      dev.push_back(device_vm_->upload(args[i], p.type));
      continue;
    }
    auto it = resident_weights_.find(p.name);
    if (it == resident_weights_.end())
      it = resident_weights_.emplace(p.name, device_vm_->upload(args[i], p.type)).first;
    dev.push_back(it->second);
  }
  return dev;
}

std::map<std::string, Tensor<double>> CompiledModelDir::run(const std::string& function,
                                                            const NpzArrays& inputs,
                                                            const std::string& where,
                                                            UGraphExecutor executor) {
  std::vector<VmValue> args = arguments(function, inputs, where);
  generic_path_note_.clear();
  if (SymBinding b = binding_of(function, args); !b.empty() && !is_compiled_binding(b)) {
    std::vector<std::string> compiled, bind;
    for (const SymBinding& c : bindings_) compiled.push_back(binding_str(c));
    for (const auto& [name, value] : b) bind.push_back(fmt::format("{}={}", name, value));
    generic_path_note_ = fmt::format(
        "{} at {} runs on the per-operator path: {} was compiled at {}; `weft compile` with "
        "--bind {} adds superoptimized kernels for it",
        function, binding_str(b), dir_,
        compiled.empty() ? std::string("no binding") : fmt::format("{}", fmt::join(compiled, "; ")),
        fmt::format("{}", fmt::join(bind, ",")));
  }
  if (executor == UGraphExecutor::cuda || executor == UGraphExecutor::cuda_emulation) {
    DeviceVm& vm =
        device_vm(executor == UGraphExecutor::cuda ? Backend::cuda : Backend::cuda_emulation);
    return named_results(vm.download(vm.run(function, device_arguments(function, args))));
  }
  if (!vm_ || vm_executor_ != executor) {
    VmOptions o = compiled_options();
    o.ugraph_executor = executor;
    // The µGraphs were searched for the directory's target: a GPU one lowers them again for it.
    if (target_by_name(target_).kind == TargetKind::gpu) o.gpu_target = target_;
    vm_ = std::make_unique<Vm>(compiled_, o);
    vm_executor_ = executor;
    vm_->compile_ugraphs();
  }
  return named_results(vm_->run(function, args));
}

CompiledModelBench::CompiledModelBench(const std::string& dir, const std::string& function,
                                       int warmup, int reps, std::optional<Backend> device)
    : function_(function), warmup_(warmup), reps_(reps), device_(device) {
  if (reps < 1 || warmup < 0) throw UserError("--reps must be at least 1, --warmup at least 0");
  dir_ = std::make_unique<CompiledModelDir>(dir);
  // The per-operator CPU baseline: every table operator its own compiled kernel, unsearched.
  ModelCompileOptions per_op;
  per_op.bindings = dir_->bindings();
  per_op.search.target = "cpu";  // the CPU baseline, whatever the compile's default
  per_op.max_region_ops = 1;
  per_op.search_regions = false;
  per_operator_ = compile_model(dir_->original(), dir_->prover(), per_op).module;
  interpreter_ = std::make_unique<Vm>(dir_->original());
  per_operator_vm_ = std::make_unique<Vm>(per_operator_, compiled_options());
  compiled_ = std::make_unique<Vm>(dir_->compiled(), compiled_options());
  per_operator_vm_->compile_ugraphs();
  compiled_->compile_ugraphs();
  if (device_) {
    // The same baseline on the device: one kernel per table operator, for the GPU target.
    DeviceVmOptions o = dir_->device_options();
    per_op.search.target = o.gpu_target.empty() ? default_target().name : o.gpu_target;
    per_operator_gpu_ = compile_model(dir_->original(), dir_->prover(), per_op).module;
    per_operator_device_ = std::make_unique<DeviceVm>(per_operator_gpu_, *device_, o);
  }
}

CompiledModelBench::~CompiledModelBench() = default;

namespace {
// The largest |got - want| over the largest |want|, over every result array.
double scaled_error_of(const std::map<std::string, Tensor<double>>& want,
                       const std::map<std::string, Tensor<double>>& got) {
  double worst = 0;
  for (const auto& [name, t] : want) {
    const Tensor<double>& u = got.at(name);
    double scale = 0;
    for (double x : t.data) scale = std::max(scale, std::abs(x));
    for (size_t i = 0; i < t.data.size(); ++i)
      worst = std::max(worst, std::abs(t.data[i] - u.data[i]) / std::max(scale, 1e-30));
  }
  return worst;
}
}  // namespace

ModelBenchResult CompiledModelBench::time(const NpzArrays& inputs, const std::string& where) {
  std::vector<VmValue> args = dir_->arguments(function_, inputs, where);
  // The original module's (and its per-operator compile's) parameters lack the folded weights.
  std::vector<VmValue> base_args = dir_->arguments(function_, inputs, where, true);
  auto time_vm = [&](Vm& vm, const std::vector<VmValue>& with, VmValue& out) {
    return time_runs([&] { out = vm.run(function_, with); }, warmup_, reps_);
  };
  ModelBenchResult r;
  VmValue a, b, c;
  r.interpreter = time_vm(*interpreter_, base_args, a);
  r.per_operator = time_vm(*per_operator_vm_, base_args, b);
  r.compiled = time_vm(*compiled_, args, c);
  auto ra = result_arrays(a);
  r.scaled_error = scaled_error_of(ra, result_arrays(c));
  r.outputs_match = r.scaled_error <= 1e-4;
  if (device_) {
    // Arguments uploaded once per input (weights included), outside the timed runs.
    DeviceVm& vm = dir_->device_vm(*device_);
    DeviceValue out;
    r.device_compiled =
        vm.time(function_, dir_->device_arguments(function_, args), warmup_, reps_, &out);
    r.device_stats = vm.stats();
    std::vector<DeviceValue> base;
    const Function& f = function_to_run(per_operator_gpu_, function_, SourceLoc{dir_->dir()});
    for (size_t i = 0; i < base_args.size(); ++i)
      base.push_back(per_operator_device_->upload(base_args[i], f.params[i].type));
    r.device_per_operator = per_operator_device_->time(function_, base, warmup_, reps_);
    r.device_scaled_error = scaled_error_of(ra, result_arrays(vm.download(out)));
    r.outputs_match = r.outputs_match && r.device_scaled_error <= 1e-4;
  }
  r.binding = dir_->binding_of(function_, base_args);
  r.compiled_binding = dir_->is_compiled_binding(r.binding);
  return r;
}

SymBinding CompiledModelDir::binding_of(const std::string& function,
                                        const std::vector<VmValue>& args) const {
  const Function& fn = function_to_run(original_, function, SourceLoc{dir_});
  SymBinding binding;
  for (size_t i = 0; i < fn.params.size() && i < args.size(); ++i)
    vm_match(fn.params[i].type, args[i], binding, fn.params[i].name, fn.loc);
  return binding;
}

bool CompiledModelDir::is_compiled_binding(const SymBinding& binding) const {
  for (const SymBinding& bound : bindings_) {
    bool all = true;
    for (const auto& [name, value] : binding) {
      auto it = bound.find(name);
      all = all && it != bound.end() && it->second == value;
    }
    if (all) return true;
  }
  return false;
}

}  // namespace weft
