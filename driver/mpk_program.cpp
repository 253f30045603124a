// Preparing a program for the mega-kernel: lowering for the platform, resolving the options.
#include "driver/mpk_program.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "lower/pipeline.h"
#include "mpk/decode_interface.h"
#include "runtime/cuda_runtime.h"

namespace weft {

std::string_view mpk_platform_name(MpkPlatform p) {
  switch (p) {
    case MpkPlatform::host:
      return "host";
    case MpkPlatform::emulation:
      return "emulation";
    case MpkPlatform::gpu:
      return "gpu";
  }
  return "?";
}

MpkPlatform mpk_platform_by_name(std::string_view name) {
  for (MpkPlatform p : {MpkPlatform::host, MpkPlatform::emulation, MpkPlatform::gpu})
    if (mpk_platform_name(p) == name) return p;
  throw UserError(fmt::format("unknown platform '{}' (host, emulation or gpu)", name));
}

int default_megakernel_workers(MpkPlatform platform) {
  return platform == MpkPlatform::gpu ? std::max(1, require_cuda_device().sms - 1) : 4;
}

bool MpkProgram::decoder() const {
  return declares_decode_interface(plan);
}

namespace {

const Target& platform_target(const MpkProgramOptions& o) {
  switch (o.platform) {
    case MpkPlatform::host:
      return target_by_name("cpu");
    case MpkPlatform::emulation:
      return o.target ? *o.target : target_by_name("h100");
    case MpkPlatform::gpu:
      return o.target ? *o.target : target_for_device(require_cuda_device());
  }
  return target_by_name("cpu");
}

MpkProgram resolve(MpkProgram p, const MpkProgramOptions& o) {
  if (o.decode) p.plan = with_decode_interface(std::move(p.plan), *o.decode);
  MegakernelProgramOptions& mk = p.options;
  mk.mpk.assign = {o.workers == 0 && p.platform != MpkPlatform::host
                       ? default_megakernel_workers(p.platform)
                       : o.workers,
                   o.dispatch};
  mk.mpk.data_dependent = o.data_dependent;
  // A declared decode step is checked here, before any compiling, and its attention kernels (the
  // readers of its KV caches) are data-dependent unless the caller names a prefix instead.
  const bool decoder = declares_decode_interface(p.plan);
  if (o.decode_loop && !decoder) decode_interface(p.plan);  // throws, saying how to declare it
  std::set<std::string> more = !o.data_dependent_reads.empty()
                                   ? kernels_reading(p.plan, o.data_dependent_reads)
                               : decoder ? kernels_reading_any(p.plan, decode_cache_tensors(p.plan))
                                         : std::set<std::string>{};
  mk.mpk.data_dependent.insert(more.begin(), more.end());
  mk.mpk.decode_on_device = o.decode_loop;
  mk.kernel.schedulers = o.schedulers;
  mk.emulated = p.platform != MpkPlatform::gpu;
  mk.arch = p.target->arch;
  return p;
}

}  // namespace

MpkProgram prepare_megakernel(const Graph& program, const MpkProgramOptions& options,
                              const std::string& fallback_name) {
  MpkProgram p;
  p.name = program.name.empty() ? fallback_name : program.name;
  p.platform = options.platform;
  p.target = &platform_target(options);
  if (p.platform != MpkPlatform::host && p.target->kind != TargetKind::gpu)
    throw UserError(
        fmt::format("target {}: the persistent kernel needs a GPU target", p.target->name));
  p.plan = lower_graph(program, *p.target);
  for (ValueId id : program.inputs) p.declared[program.value(id).name] = program.type(id).dtype;
  return resolve(std::move(p), options);
}

MpkProgram prepare_megakernel(ProgramPlan plan, const MpkProgramOptions& options) {
  MpkProgram p;
  p.name = plan.name.empty() ? "program" : plan.name;
  p.platform = options.platform;
  p.target = &target_by_name(plan.target);
  const bool cpu = p.target->kind == TargetKind::cpu;
  if (cpu != (p.platform == MpkPlatform::host))
    throw UserError(
        fmt::format("a plan for {} does not run on {}: the host runtime takes a CPU "
                    "plan, the persistent kernel a GPU plan",
                    p.target->name, mpk_platform_name(p.platform)));
  for (const PlanBuffer& t : plan.tensors)
    if (t.role == TensorRole::input) p.declared[t.name] = t.dtype;
  p.plan = std::move(plan);
  return resolve(std::move(p), options);
}

MpkCompiled compile_megakernel(const MpkProgram& p, const std::string& stop_after,
                               const MpkStepHook& after_step) {
  MpkOptions o = p.options.mpk;
  o.stop_after = stop_after;
  return compile_task_graph(p.plan, o, after_step);
}

MegakernelUnit megakernel_unit(const MpkProgram& p) {
  if (p.platform == MpkPlatform::host)
    throw UserError("the persistent kernel's unit is for emulation or a GPU, not the host runtime");
  return emit_megakernel_program_unit(p.plan, p.options);
}

}  // namespace weft
