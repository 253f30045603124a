// Host emulation of generated CUDA: compile with the host compiler (runtime build cache), dlopen,
// run on host buffers in the plan's dtypes.
#include "runtime/emulated_program.h"

#include <fmt/format.h>

#include "core/dtype_convert.h"
#include "core/error.h"

namespace weft {

namespace {
using LaunchFn = int (*)(void* const*, void* const*, void*, void*);
}  // namespace

struct EmulatedProgram::Buffers {
  std::vector<std::vector<uint8_t>> in_bytes, out_bytes;
  std::vector<void*> in_ptrs, out_ptrs;
  std::vector<uint8_t> workspace;
};

EmulatedProgram::EmulatedProgram(const ProgramPlan& plan, std::string source)
    : Program(Backend::cuda_emulation, plan, std::move(source)) {}

EmulatedProgram::Buffers EmulatedProgram::buffers(
    const std::vector<std::vector<float>>& inputs) const {
  Buffers b;
  for (size_t i = 0; i < inputs.size(); ++i)
    b.in_bytes.push_back(
        encode_as(inputs[i].data(), inputs[i].size(), plan().find_tensor(plan().inputs[i])->dtype));
  for (auto& x : b.in_bytes) b.in_ptrs.push_back(x.data());
  for (const std::string& name : plan().outputs)
    b.out_bytes.emplace_back(static_cast<size_t>(plan().find_tensor(name)->bytes()), 0xff);
  for (auto& o : b.out_bytes) b.out_ptrs.push_back(o.data());
  b.workspace.assign(static_cast<size_t>(plan().workspace_bytes) + 256, 0xff);
  return b;
}

void EmulatedProgram::launch(Buffers& b) const {
  launch_raw_checked(b.in_ptrs.data(), b.out_ptrs.data(), b.workspace.data(), nullptr);
}

void EmulatedProgram::launch_raw_checked(void* const* inputs, void* const* outputs, void* workspace,
                                         void*) const {
  int rc = reinterpret_cast<LaunchFn>(entry_)(inputs, outputs, workspace, nullptr);
  WEFT_CHECK(rc == 0, "emulated weft_cuda_launch of {} returned {}", plan().name, rc);
}

std::vector<std::vector<float>> EmulatedProgram::run_checked(
    const std::vector<std::vector<float>>& inputs) const {
  Buffers b = buffers(inputs);
  launch(b);
  std::vector<std::vector<float>> outs;
  for (size_t j = 0; j < plan().outputs.size(); ++j) {
    const PlanBuffer* t = plan().find_tensor(plan().outputs[j]);
    std::vector<float> v(static_cast<size_t>(numel(t->shape)));
    decode_from(b.out_bytes[j].data(), v.size(), t->dtype, v.data());
    outs.push_back(std::move(v));
  }
  return outs;
}

Timing EmulatedProgram::time_checked(const std::vector<std::vector<float>>& inputs, int warmup,
                                     int reps) const {
  Buffers b = buffers(inputs);
  return time_runs([&] { launch(b); }, warmup, reps);
}

CacheResult build_emulated_library(const std::string& source, const BuildOptions& options) {
  const EmulationBuildOptions& o = options.emulation;
  CacheBuild build;
  build.configured_dir = options.cache_dir;
  build.key_material = o.compiler + " " + o.flags + " (host emulation)";
  build.source = source;
  build.source_extension = ".cu";
  build.command = [&](const std::string& src, const std::string& out) {
    return fmt::format("{} {} -o '{}' '{}'", o.compiler, o.flags, out, src);
  };
  return build_cached(build);
}

std::unique_ptr<EmulatedProgram> build_emulated_program(const ProgramPlan& plan,
                                                        const std::string& source,
                                                        const BuildOptions& options) {
  std::unique_ptr<EmulatedProgram> prog(new EmulatedProgram(plan, source));
  CacheResult r = build_emulated_library(source, options);
  WEFT_CHECK(!r.failed,
             "the generated CUDA did not compile for host emulation ({}; source kept "
             "at {}):\n{}",
             r.command, r.kept_source, r.log);
  prog->load(r);
  prog->entry_ = prog->symbol("weft_cuda_launch");
  WEFT_CHECK(prog->entry_ != nullptr, "{} has no weft_cuda_launch", r.artifact);
  return prog;
}

}  // namespace weft
