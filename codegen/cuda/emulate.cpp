// Host emulation of generated CUDA: compile with the host compiler (runtime build cache), dlopen,
// run on host buffers in the plan's dtypes.
#include "codegen/cuda/emulate.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "codegen/cuda/emit_cuda.h"
#include "core/error.h"
#include "runtime/build_cache.h"
#include "runtime/dtype_convert.h"

namespace weft {

namespace {
using LaunchFn = int (*)(void* const*, void* const*, void*, void*);
}  // namespace

EmulatedProgram::~EmulatedProgram() {
  if (handle_) dlclose(handle_);
}

std::vector<std::vector<float>> EmulatedProgram::run(
    const std::vector<std::vector<float>>& inputs) const {
  if (inputs.size() != plan_.inputs.size())
    throw UserError(fmt::format("the program takes {} inputs, {} were given", plan_.inputs.size(),
                                inputs.size()));
  std::vector<std::vector<uint8_t>> in_bytes, out_bytes;
  std::vector<void*> in_ptrs, out_ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PlanBuffer* t = plan_.find_tensor(plan_.inputs[i]);
    if (static_cast<int64_t>(inputs[i].size()) != numel(t->shape))
      throw UserError(fmt::format("input {} needs {} values, {} were given", t->name,
                                  numel(t->shape), inputs[i].size()));
    in_bytes.push_back(encode_as(inputs[i].data(), inputs[i].size(), t->dtype));
  }
  for (auto& b : in_bytes) in_ptrs.push_back(b.data());
  // 0xff bytes are NaN in every dtype: an element the program never writes shows up.
  for (const std::string& name : plan_.outputs)
    out_bytes.emplace_back(static_cast<size_t>(plan_.find_tensor(name)->bytes()), 0xff);
  for (auto& o : out_bytes) out_ptrs.push_back(o.data());
  std::vector<uint8_t> workspace(static_cast<size_t>(plan_.workspace_bytes) + 256, 0xff);
  int rc = reinterpret_cast<LaunchFn>(entry_)(in_ptrs.data(), out_ptrs.data(), workspace.data(),
                                              nullptr);
  WEFT_CHECK(rc == 0, "emulated weft_cuda_launch of {} returned {}", plan_.name, rc);
  std::vector<std::vector<float>> outs;
  for (size_t j = 0; j < plan_.outputs.size(); ++j) {
    const PlanBuffer* t = plan_.find_tensor(plan_.outputs[j]);
    std::vector<float> v(static_cast<size_t>(numel(t->shape)));
    decode_from(out_bytes[j].data(), v.size(), t->dtype, v.data());
    outs.push_back(std::move(v));
  }
  return outs;
}

std::unique_ptr<EmulatedProgram> compile_emulated(const ProgramPlan& plan,
                                                  const EmulationOptions& options) {
  return compile_emulated_source(plan, emit_cuda_source(plan), options);
}

std::unique_ptr<EmulatedProgram> compile_emulated_source(const ProgramPlan& plan,
                                                         const std::string& source,
                                                         const EmulationOptions& options) {
  std::unique_ptr<EmulatedProgram> prog(new EmulatedProgram());
  prog->plan_ = plan;
  prog->source_ = source;
  CacheBuild build;
  build.configured_dir = options.cache_dir;
  build.key_material = options.compiler + " " + options.flags + " (host emulation)";
  build.source = prog->source_;
  build.source_extension = ".cu";
  build.command = [&](const std::string& src, const std::string& out) {
    return fmt::format("{} {} -o '{}' '{}'", options.compiler, options.flags, out, src);
  };
  CacheResult r = build_cached(build);
  WEFT_CHECK(!r.failed,
             "the generated CUDA did not compile for host emulation ({}; source kept "
             "at {}):\n{}",
             r.command, r.kept_source, r.log);
  prog->artifact_ = r.artifact;
  prog->from_cache_ = r.from_cache;
  prog->handle_ = dlopen(r.artifact.c_str(), RTLD_NOW | RTLD_LOCAL);
  WEFT_CHECK(prog->handle_ != nullptr, "cannot load {}: {}", r.artifact, dlerror());
  prog->entry_ = dlsym(prog->handle_, "weft_cuda_launch");
  WEFT_CHECK(prog->entry_ != nullptr, "{} has no weft_cuda_launch", r.artifact);
  return prog;
}

}  // namespace weft
