// A compiled model's function as one persistent kernel: trace, plan, program; inputs and results
// in the plan's order.
#include "driver/model_megakernel.h"

#include <fmt/format.h>

#include <chrono>

#include "driver/model_megakernel_plan.h"
#include "exec/run_io.h"

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
  MpkProgramOptions o;
  o.platform = options.platform;
  o.workers = options.workers == 0 ? default_megakernel_workers(options.platform) : options.workers;
  o.dispatch = options.dispatch;
  m.program = prepare_megakernel(std::move(plan), o);
  return m;
}

ModelMegakernel model_megakernel(CompiledModelDir& dir, const std::vector<VmValue>& args,
                                 const ModelMegakernelOptions& options) {
  function_to_run(dir.compiled(), options.function, SourceLoc{dir.dir()});
  DeviceVm& vm =
      dir.device_vm(options.platform == MpkPlatform::gpu ? Backend::cuda : Backend::cuda_emulation);
  return model_megakernel(vm, options.function, dir.device_arguments(options.function, args),
                          options);
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

}  // namespace weft
