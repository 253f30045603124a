// A compiled model's function as one persistent kernel: trace, plan, program; inputs and results
// in the plan's order.
#include "driver/model_megakernel.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "driver/model_megakernel_plan.h"
#include "driver/mpk_run.h"
#include "exec/run_io.h"
#include "lower/plan_text.h"

namespace weft {

namespace {

// A value's tensors in order, named as result_arrays names them (`key`: "result", "result.0",
// ...). Integers are part of the binding the plan is built for: skipped in parameters, refused
// in results (`what` names the value).
void flatten(const DeviceValue& v, const std::string& key, std::vector<NamedDeviceTensor>& out,
             const std::string& what, bool result) {
  if (const DeviceTensor* t = v.tensor()) {
    out.push_back({key, *t});
  } else if (const DeviceTuple* tu = v.tuple()) {
    for (size_t i = 0; i < tu->size(); ++i)
      flatten((*tu)[i], fmt::format("{}.{}", key, i), out, what, result);
  } else if (result && std::holds_alternative<int64_t>(v.v)) {
    throw UserError(fmt::format(
        "{} is an integer: one persistent kernel computes tensors only (run it with `weft run "
        "DIR`)",
        what));
  }
}

void flatten_host(const VmValue& v, std::vector<const Tensor<double>*>& out) {
  if (const Tensor<double>* t = v.tensor())
    out.push_back(t);
  else if (const VmTuple* tu = v.tuple())
    for (const VmValue& x : *tu) flatten_host(x, out);
}

// Plan tensor names are identifiers: "result.0" becomes "result_0".
std::string identifier(std::string key) {
  for (char& c : key)
    if (c == '.') c = '_';
  return key;
}

namespace fs = std::filesystem;

// A binding as a file name's part: "batch=1,seq=7" (names in order), "shape" for none.
std::string binding_key(const SymBinding& b) {
  std::string key;
  for (const auto& [name, value] : b)
    key += fmt::format("{}{}={}", key.empty() ? "" : ",", name, value);
  return key.empty() ? "shape" : key;
}

fs::path stored_dir(const CompiledModelDir& dir) {
  return fs::path(dir.dir()) / "megakernel";
}

MpkProgramOptions program_options(const ModelMegakernelOptions& options) {
  MpkProgramOptions o;
  o.platform = options.platform;
  o.workers = options.workers == 0 ? default_megakernel_workers(options.platform) : options.workers;
  o.dispatch = options.dispatch;
  return o;
}

// The plan DIR stored for `function` at `binding`, when it has one.
std::optional<ModelMegakernel> stored_megakernel(const CompiledModelDir& dir,
                                                 const std::string& function,
                                                 const SymBinding& binding,
                                                 const ModelMegakernelOptions& options) {
  const fs::path index_path = stored_dir(dir) / "index.json";
  if (!fs::exists(index_path)) return std::nullopt;
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(std::ifstream(index_path));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: {}", index_path.string(), e.what()));
  }
  const std::string key = binding_key(binding);
  for (const auto& entry : index) {
    if (entry.value("function", "") != function || entry.value("binding", "") != key) continue;
    const fs::path plan_path = stored_dir(dir) / entry.value("plan", "");
    std::ifstream in(plan_path);
    if (!in) throw UserError(fmt::format("{}: cannot read {}", dir.dir(), plan_path.string()));
    std::stringstream text;
    text << in.rdbuf();
    ModelMegakernel m;
    m.stored = true;
    m.model_kernel_launches = entry.value("model_kernels", int64_t{0});
    m.ugraph_launches = entry.value("ugraph_units", int64_t{0});
    for (const auto& r : entry.at("results")) {
      m.result_keys.push_back(r.at("name").get<std::string>());
      m.result_shapes.push_back(r.at("shape").get<Shape>());
    }
    m.program =
        prepare_megakernel(parse_plan(text.str(), plan_path.string()), program_options(options));
    return m;
  }
  return std::nullopt;
}

}  // namespace

ModelMegakernel model_megakernel(DeviceVm& vm, const std::string& function,
                                 const std::vector<DeviceValue>& args,
                                 const ModelMegakernelOptions& options) {
  if (options.platform == MpkPlatform::host)
    throw UserError(
        "a model's persistent kernel runs in emulation or on a GPU (its operators are device "
        "kernels), not on host threads");
  const Backend backend =
      options.platform == MpkPlatform::gpu ? Backend::cuda : Backend::cuda_emulation;
  WEFT_CHECK(vm.backend() == backend, "a {} persistent kernel traced on the {} executor",
             mpk_platform_name(options.platform), backend_name(vm.backend()));
  const auto start = std::chrono::steady_clock::now();
  const Function& fn = function_to_run(vm.vm().module(), function, SourceLoc{});
  DeviceValue result;
  const DeviceTrace trace = vm.trace(function, args, &result);

  std::vector<NamedDeviceTensor> inputs, outputs;
  for (size_t i = 0; i < args.size(); ++i)
    flatten(args[i], fn.params.at(i).name, inputs, "parameter " + fn.params.at(i).name, false);
  for (NamedDeviceTensor& t : inputs) t.name = identifier(t.name);
  flatten(result, "result", outputs, fmt::format("the result of {}", function), true);
  ModelMegakernel m;
  for (NamedDeviceTensor& t : outputs) {
    m.result_keys.push_back(t.name);
    m.result_shapes.push_back(t.tensor.shape);
    t.name = identifier(t.name);
  }
  // The µGraphs' plans were lowered for the executor's target; the model kernels' plan is too.
  std::string target_name = backend_target(backend, vm.options().gpu_target).name;
  for (const TracedLaunch& l : trace.launches) {
    if (l.program) {
      target_name = l.program->plan().target;
      ++m.ugraph_launches;
    } else {
      ++m.model_kernel_launches;
    }
  }
  ProgramPlan plan = megakernel_plan_from_trace(
      trace, inputs, outputs, identifier(vm.vm().module().name + "_" + function), target_name);
  m.trace_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.program = prepare_megakernel(std::move(plan), program_options(options));
  return m;
}

ModelMegakernel model_megakernel(CompiledModelDir& dir, const std::vector<VmValue>& args,
                                 const ModelMegakernelOptions& options) {
  function_to_run(dir.compiled(), options.function, SourceLoc{dir.dir()});
  if (auto m =
          stored_megakernel(dir, options.function, dir.binding_of(options.function, args), options))
    return std::move(*m);
  DeviceVm& vm =
      dir.device_vm(options.platform == MpkPlatform::gpu ? Backend::cuda : Backend::cuda_emulation);
  return model_megakernel(vm, options.function, dir.device_arguments(options.function, args),
                          options);
}

std::vector<std::optional<size_t>> model_megakernel_input_of(const std::vector<VmValue>& args) {
  std::vector<std::optional<size_t>> out;
  std::vector<const Tensor<double>*> tensors;
  for (const VmValue& v : args) {
    if (v.tensor())
      out.emplace_back(tensors.size());
    else
      out.emplace_back(std::nullopt);
    flatten_host(v, tensors);
  }
  return out;
}

std::vector<std::vector<float>> model_megakernel_inputs(const ModelMegakernel& m,
                                                        const std::vector<VmValue>& args) {
  std::vector<const Tensor<double>*> tensors;
  for (const VmValue& v : args) flatten_host(v, tensors);
  WEFT_CHECK(tensors.size() == m.program.plan.inputs.size(),
             "{} argument tensors for a plan of {} inputs", tensors.size(),
             m.program.plan.inputs.size());
  std::vector<std::vector<float>> out;
  for (const Tensor<double>* t : tensors) out.emplace_back(t->data.begin(), t->data.end());
  return out;
}

std::map<std::string, Tensor<double>> model_megakernel_results(
    const CompiledModelDir& dir, const ModelMegakernel& m,
    const std::vector<std::vector<float>>& outputs) {
  WEFT_CHECK(outputs.size() == m.result_keys.size(), "{} outputs for {} results", outputs.size(),
             m.result_keys.size());
  std::map<std::string, Tensor<double>> arrays;
  for (size_t i = 0; i < outputs.size(); ++i) {
    arrays[m.result_keys[i]] = Tensor<double>(
        m.result_shapes.at(i), std::vector<double>(outputs[i].begin(), outputs[i].end()));
  }
  return dir.named_arrays(std::move(arrays));
}

std::vector<std::string> write_dir_megakernels(CompiledModelDir& dir, const std::string& function) {
  std::vector<SymBinding> bindings = dir.bindings();
  if (bindings.empty()) bindings.emplace_back();  // a fixed-shape model: its one shape
  const fs::path out = stored_dir(dir);
  fs::remove_all(out);
  fs::create_directories(out);
  nlohmann::ordered_json index = nlohmann::ordered_json::array();
  std::vector<std::string> written;
  for (const SymBinding& b : bindings) {
    std::vector<VmValue> args = dir.zero_arguments(function, b);
    const std::string key = binding_key(dir.binding_of(function, args));
    ModelMegakernelOptions o;
    o.function = function;
    ModelMegakernel m = model_megakernel(dir, args, o);
    const std::string file = fmt::format("{}.{}.plan", function, key);
    std::ofstream(out / file) << print_plan(m.program.plan);
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    for (size_t i = 0; i < m.result_keys.size(); ++i)
      results.push_back({{"name", m.result_keys[i]}, {"shape", m.result_shapes[i]}});
    index.push_back({{"function", function},
                     {"binding", key},
                     {"plan", file},
                     {"ugraph_units", m.ugraph_launches},
                     {"model_kernels", m.model_kernel_launches},
                     {"plan_kernels", m.program.plan.kernels.size()},
                     {"results", results}});
    written.push_back((out / file).string());
  }
  std::ofstream index_file(out / "index.json");
  index_file << index.dump(1) << "\n";
  if (!index_file) throw UserError(fmt::format("cannot write {}", (out / "index.json").string()));
  return written;
}

ModelMegakernelRun run_model_megakernel(const CompiledModelDir& dir, const ModelMegakernel& m,
                                        const std::vector<VmValue>& args,
                                        const std::function<void(const std::string&)>& progress) {
  MegakernelRunner runner(m.program);
  const MpkCompiled& c = runner.compiled();
  if (progress) {
    if (m.stored) progress(fmt::format("the plan {} stored for this binding", dir.dir()));
    progress(fmt::format(
        "{} plan kernels from {} launches ({} µGraph units, {} model kernels), {} tasks, {} "
        "events, {} workers ({}), imbalance {:.3f}; traced in {:.2f} s, task graph in {:.3f} s",
        m.program.plan.kernels.size(), m.ugraph_launches + m.model_kernel_launches,
        m.ugraph_launches, m.model_kernel_launches, c.graph.tasks.size(), c.graph.events.size(),
        c.graph.workers, mpk_platform_name(m.program.platform), c.balance.time_imbalance,
        m.trace_seconds, c.seconds));
  }
  MpkRunOptions run;
  run.inputs = model_megakernel_inputs(m, args);
  MpkRunReport report = runner.run(run);
  if (!report.same)
    throw UserError(fmt::format(
        "{}: the persistent kernel's outputs differ from its kernels run one by one (a bug: "
        "please report it with the directory and inputs)",
        dir.dir()));
  ModelMegakernelRun r;
  r.seconds = report.seconds;
  r.workspace_bytes = m.program.plan.workspace_bytes;
  for (const PlanBuffer& t : m.program.plan.tensors)
    if (t.role == TensorRole::temp && t.name.starts_with("buf")) r.unshared_bytes += t.bytes();
  r.results = model_megakernel_results(dir, m, report.outputs);
  return r;
}

ModelMegakernelTiming time_model_megakernel(const ModelMegakernel& m,
                                            const std::vector<VmValue>& args, int warmup,
                                            int reps) {
  if (reps < 1) throw UserError("--reps must be at least 1");
  MegakernelRunner runner(m.program);
  MpkRunOptions run;
  run.inputs = model_megakernel_inputs(m, args);
  ModelMegakernelTiming t;
  t.same = runner.run(run).same;
  t.timing = runner.megakernel().time(run.inputs, 1, warmup, reps);
  t.tasks = static_cast<int64_t>(runner.compiled().graph.tasks.size());
  t.workers = runner.compiled().graph.workers;
  return t;
}

}  // namespace weft
