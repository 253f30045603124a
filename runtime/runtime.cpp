// Compiling generated C++ with the host compiler, caching the shared object, loading and running.
#include "runtime/runtime.h"

#include "runtime/host_tensors.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "codegen/cpu/emit_cpu.h"
#include "core/error.h"
#include "lower/pipeline.h"
#include "runtime/build_cache.h"

namespace weft {

namespace {

// Mirrors the weft_rt struct of cpu_runtime_abi().
struct Rt {
  void (*parallel_for)(int64_t n, void (*fn)(void*, int64_t), void* ctx);
};

void tbb_parallel_for(int64_t n, void (*fn)(void*, int64_t), void* ctx) {
  // Tasks write disjoint outputs, so results do not depend on how TBB splits the range.
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i != r.end(); ++i) fn(ctx, i);
  });
}

const Rt kRt{tbb_parallel_for};

using EntryFn = void (*)(const Rt*, const float* const*, float* const*, float*);

}  // namespace

std::string cache_directory(const CompileOptions& options) {
  return default_cache_directory(options.cache_dir);
}

CompiledProgram::~CompiledProgram() {
  if (handle_) dlclose(handle_);
}

void CompiledProgram::run(const std::vector<const float*>& inputs,
                          const std::vector<float*>& outputs) const {
  WEFT_CHECK(inputs.size() == plan_.inputs.size() && outputs.size() == plan_.outputs.size(),
             "run: {} inputs / {} outputs given, the plan has {} / {}", inputs.size(),
             outputs.size(), plan_.inputs.size(), plan_.outputs.size());
  reinterpret_cast<EntryFn>(entry_)(&kRt, inputs.data(), outputs.data(), workspace_.data());
}

std::vector<std::vector<float>> CompiledProgram::run(
    const std::vector<std::vector<float>>& inputs) const {
  if (inputs.size() != plan_.inputs.size())
    throw UserError(fmt::format("the program takes {} inputs, {} were given", plan_.inputs.size(),
                                inputs.size()));
  std::vector<const float*> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int64_t want = numel(plan_.find_tensor(plan_.inputs[i])->shape);
    if (static_cast<int64_t>(inputs[i].size()) != want)
      throw UserError(fmt::format("input {} needs {} values, {} were given", plan_.inputs[i], want,
                                  inputs[i].size()));
    in.push_back(inputs[i].data());
  }
  std::vector<std::vector<float>> outs;
  std::vector<float*> out;
  for (const std::string& name : plan_.outputs)
    outs.emplace_back(static_cast<size_t>(numel(plan_.find_tensor(name)->shape)), 0.0f);
  for (auto& o : outs) out.push_back(o.data());
  run(in, out);
  return outs;
}

std::vector<Tensor<double>> run_on_cpu(const Graph& graph,
                                       const std::vector<Tensor<double>>& inputs) {
  auto prog = compile_program(graph, target_by_name("cpu"));
  return output_tensors(prog->plan(), prog->run(host_buffers_of(inputs)));
}

std::unique_ptr<CompiledProgram> compile_program(const Graph& graph, const Target& target,
                                                 const CompileOptions& options) {
  if (target.kind != TargetKind::cpu)
    throw UserError(fmt::format(
        "target '{}' has no runtime backend in this build; `weft compile --target {}` writes its "
        "kernel plan",
        target.name, target.name));
  return compile_plan(lower_graph(graph, target), options);
}

std::unique_ptr<CompiledProgram> compile_plan(const ProgramPlan& plan,
                                              const CompileOptions& options) {
  std::unique_ptr<CompiledProgram> prog(new CompiledProgram());
  prog->plan_ = plan;
  prog->source_ = emit_cpu_source(plan);
  std::string command_base = options.compiler + " " + options.flags;
  CacheBuild build;
  build.configured_dir = options.cache_dir;
  build.key_material = command_base;
  build.source = prog->source_;
  build.source_extension = ".cpp";
  build.command = [&](const std::string& src, const std::string& out) {
    return fmt::format("{} -o '{}' '{}' -lopenblas", command_base, out, src);
  };
  CacheResult built = build_cached(build);
  WEFT_CHECK(!built.failed, "the generated C++ did not compile ({}; source kept at {}):\n{}",
             built.command, built.kept_source, built.log);
  prog->artifact_ = built.artifact;
  prog->from_cache_ = built.from_cache;
  const std::string& so = built.artifact;
  prog->handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  WEFT_CHECK(prog->handle_ != nullptr, "cannot load {}: {}", so, dlerror());
  prog->entry_ = dlsym(prog->handle_, "weft_main");
  WEFT_CHECK(prog->entry_ != nullptr, "{} has no weft_main", so);
  prog->workspace_.assign(static_cast<size_t>(plan.workspace_bytes / 4 + 1), 0.0f);
  return prog;
}

}  // namespace weft
