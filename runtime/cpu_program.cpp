// Compiling generated C++ with the host compiler, caching the shared object, loading and running.
#include "runtime/cpu_program.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "codegen/cpu/support/weft_rt.h"
#include "core/error.h"

namespace weft {

namespace {

void tbb_parallel_for(int64_t n, void (*fn)(void*, int64_t), void* ctx) {
  // Tasks write disjoint outputs, so results do not depend on how TBB splits the range.
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i != r.end(); ++i) fn(ctx, i);
  });
}

const weft_rt kRt{tbb_parallel_for};

// A task of the task-graph runtime runs on its worker thread alone: the workers are the
// parallelism.
void serial_parallel_for(int64_t n, void (*fn)(void*, int64_t), void* ctx) {
  for (int64_t i = 0; i < n; ++i) fn(ctx, i);
}
const weft_rt kSerialRt{serial_parallel_for};

using TaskFn = void (*)(const weft_rt*, float* const*, int64_t, int64_t, int64_t, int64_t, float*);

using EntryFn = void (*)(const weft_rt*, const float* const*, float* const*, float*);

}  // namespace

CpuProgram::CpuProgram(const ProgramPlan& plan, std::string source)
    : Program(Backend::cpu, plan, std::move(source)) {}

void CpuProgram::run(const std::vector<const float*>& inputs,
                     const std::vector<float*>& outputs) const {
  WEFT_CHECK(inputs.size() == plan().inputs.size() && outputs.size() == plan().outputs.size(),
             "run: {} inputs / {} outputs given, the plan has {} / {}", inputs.size(),
             outputs.size(), plan().inputs.size(), plan().outputs.size());
  reinterpret_cast<EntryFn>(entry_)(&kRt, inputs.data(), outputs.data(), workspace_.data());
}

void CpuProgram::run_task(float* const* tensors, int kernel, int64_t bx, int64_t by, int64_t bz,
                          float* arena) const {
  WEFT_CHECK(kernel >= 0 && kernel < static_cast<int>(plan().kernels.size()),
             "run_task: kernel {} of {}", kernel, plan().kernels.size());
  reinterpret_cast<TaskFn>(task_entry_)(&kSerialRt, tensors, kernel, bx, by, bz, arena);
}

namespace {

// Output buffers of `plan`, zero-filled, and pointers to them and to `inputs`.
struct HostBuffers {
  std::vector<std::vector<float>> outputs;
  std::vector<const float*> in;
  std::vector<float*> out;

  HostBuffers(const ProgramPlan& plan, const std::vector<std::vector<float>>& inputs) {
    for (const std::string& name : plan.outputs)
      outputs.emplace_back(static_cast<size_t>(numel(plan.find_tensor(name)->shape)), 0.0f);
    for (const auto& x : inputs) in.push_back(x.data());
    for (auto& o : outputs) out.push_back(o.data());
  }
};

}  // namespace

std::vector<std::vector<float>> CpuProgram::run_checked(
    const std::vector<std::vector<float>>& inputs) const {
  HostBuffers b(plan(), inputs);
  run(b.in, b.out);
  return std::move(b.outputs);
}

Timing CpuProgram::time_checked(const std::vector<std::vector<float>>& inputs, int warmup,
                                int reps) const {
  HostBuffers b(plan(), inputs);
  return time_runs([&] { run(b.in, b.out); }, warmup, reps);
}

std::unique_ptr<CpuProgram> build_cpu_program(const ProgramPlan& plan, const std::string& source,
                                              const BuildOptions& options) {
  std::unique_ptr<CpuProgram> prog(new CpuProgram(plan, source));
  std::string command_base = options.cpu.compiler + " " + options.cpu.flags;
  CacheBuild build;
  build.configured_dir = options.cache_dir;
  build.key_material = command_base;
  build.source = source;
  build.source_extension = ".cpp";
  build.command = [&](const std::string& src, const std::string& out) {
    return fmt::format("{} -o '{}' '{}' -lopenblas", command_base, out, src);
  };
  CacheResult built = build_cached(build);
  WEFT_CHECK(!built.failed, "the generated C++ did not compile ({}; source kept at {}):\n{}",
             built.command, built.kept_source, built.log);
  prog->load(built);
  prog->entry_ = prog->symbol("weft_main");
  WEFT_CHECK(prog->entry_ != nullptr, "{} has no weft_main", built.artifact);
  prog->task_entry_ = prog->symbol("weft_run_task");
  WEFT_CHECK(prog->task_entry_ != nullptr, "{} has no weft_run_task", built.artifact);
  prog->workspace_.assign(static_cast<size_t>(plan.workspace_bytes / 4 + 1), 0.0f);
  return prog;
}

}  // namespace weft
