// The program interface's shared part (backend names, input checks, loading the library) and the
// factory choosing the backend's implementation.
#include "runtime/program.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "codegen/cpu/emit_cpu.h"
#include "codegen/cuda/emit_cuda.h"
#include "core/error.h"
#include "lower/pipeline.h"
#include "runtime/cpu_program.h"
#include "runtime/cuda_runtime.h"
#include "runtime/emulated_program.h"
#include "runtime/generated_library.h"

namespace weft {

std::string_view backend_name(Backend backend) {
  switch (backend) {
    case Backend::cpu:
      return "cpu";
    case Backend::cuda:
      return "cuda";
    case Backend::cuda_emulation:
      return "cuda-emulation";
  }
  return "?";
}

const std::vector<Backend>& all_backends() {
  static const std::vector<Backend> backends = {Backend::cpu, Backend::cuda,
                                                Backend::cuda_emulation};
  return backends;
}

std::optional<Backend> backend_by_name(std::string_view name) {
  for (Backend b : all_backends())
    if (backend_name(b) == name) return b;
  return std::nullopt;
}

TargetKind backend_target_kind(Backend backend) {
  switch (backend) {
    case Backend::cpu:
      return TargetKind::cpu;
    case Backend::cuda:
    case Backend::cuda_emulation:
      return TargetKind::gpu;
  }
  return TargetKind::cpu;
}

void require_backend(Backend backend) {
  if (backend == Backend::cuda) require_cuda_device();
}

const Target& backend_target(Backend backend, const std::string& target_name) {
  switch (backend) {
    case Backend::cpu:
      if (!target_name.empty() && target_name != "cpu")
        throw UserError(fmt::format("the cpu backend runs the cpu target, not '{}'", target_name));
      return target_by_name("cpu");
    case Backend::cuda: {
      // Before anything is compiled: without a device there is nothing to run on.
      const CudaDevice& dev = require_cuda_device();
      return target_name.empty() ? target_for_device(dev) : target_by_name(target_name);
    }
    case Backend::cuda_emulation:
      return target_name.empty() ? default_target() : target_by_name(target_name);
  }
  WEFT_CHECK(false, "unknown backend");
  return target_by_name("cpu");
}

Program::Program(Backend backend, const ProgramPlan& plan, std::string source)
    : backend_(backend), plan_(plan), source_(std::move(source)) {}

Program::~Program() {
  if (handle_) dlclose(handle_);
}

void Program::load(const CacheResult& built) {
  WEFT_CHECK(!built.failed && handle_ == nullptr, "loading a failed or second build of {}",
             plan_.name);
  artifact_ = built.artifact;
  from_cache_ = built.from_cache;
  handle_ = open_generated_library(artifact_);
}

void* Program::symbol(const char* name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

void Program::check_inputs(const std::vector<std::vector<float>>& inputs) const {
  if (inputs.size() != plan_.inputs.size())
    throw UserError(fmt::format("the program takes {} inputs, {} were given", plan_.inputs.size(),
                                inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    int64_t want = numel(plan_.find_tensor(plan_.inputs[i])->shape);
    if (static_cast<int64_t>(inputs[i].size()) != want)
      throw UserError(fmt::format("input {} needs {} values, {} were given", plan_.inputs[i], want,
                                  inputs[i].size()));
  }
}

std::vector<std::vector<float>> Program::run(const std::vector<std::vector<float>>& inputs) const {
  check_inputs(inputs);
  return run_checked(inputs);
}

Timing Program::time(const std::vector<std::vector<float>>& inputs, int warmup, int reps) const {
  WEFT_CHECK(reps >= 1 && warmup >= 0, "bad timing parameters: {} reps after {} warm-up runs", reps,
             warmup);
  check_inputs(inputs);
  return time_checked(inputs, warmup, reps);
}

void Program::launch_raw(void* const* inputs, void* const* outputs, void* workspace,
                         void* stream) const {
  launch_raw_checked(inputs, outputs, workspace, stream);
}

void Program::launch_raw_checked(void* const*, void* const*, void*, void*) const {
  throw UserError(fmt::format("{} runs on the {} backend, which has no device launch", plan_.name,
                              backend_name(backend_)));
}

std::string generate_source(const ProgramPlan& plan, Backend backend) {
  switch (backend) {
    case Backend::cpu:
      return emit_cpu_source(plan);
    case Backend::cuda:
    case Backend::cuda_emulation:
      return emit_cuda_source(plan);
  }
  WEFT_CHECK(false, "unknown backend");
  return "";
}

std::string_view source_extension(Backend backend) {
  return backend == Backend::cpu ? ".cpp" : ".cu";
}

std::unique_ptr<Program> build_program(const ProgramPlan& plan, Backend backend,
                                       const std::string& source, const BuildOptions& options) {
  const Target& target = target_by_name(plan.target);
  if (target.kind != backend_target_kind(backend))
    throw UserError(fmt::format(
        "plan {} is for target '{}', but the {} backend runs {} targets", plan.name, plan.target,
        backend_name(backend),
        backend_target_kind(backend) == TargetKind::gpu ? "GPU (h100, h200, a100)" : "CPU (cpu)"));
  switch (backend) {
    case Backend::cpu:
      return build_cpu_program(plan, source, options);
    case Backend::cuda:
      return build_cuda_program(plan, source, options);
    case Backend::cuda_emulation:
      return build_emulated_program(plan, source, options);
  }
  WEFT_CHECK(false, "unknown backend");
  return nullptr;
}

std::unique_ptr<Program> load_program(const ProgramPlan& plan, Backend backend,
                                      const BuildOptions& options) {
  return build_program(plan, backend, generate_source(plan, backend), options);
}

std::unique_ptr<Program> compile_program(const Graph& graph, const Target& target, Backend backend,
                                         const BuildOptions& options) {
  if (target.kind != backend_target_kind(backend)) {
    if (backend == Backend::cpu)
      throw UserError(fmt::format(
          "target '{}' is a GPU; the cpu backend runs the CPU target (a GPU target runs on the "
          "cuda backend, or on the host with cuda-emulation)",
          target.name));
    throw UserError(fmt::format(
        "target '{}' is not a GPU; the CUDA backend needs h100, h200 or a100 (or the device's "
        "own, the default)",
        target.name));
  }
  return load_program(lower_graph(graph, target), backend, options);
}

}  // namespace weft
