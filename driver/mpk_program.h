// Driver: a program (or a plan) prepared for the mega-kernel (mpk/, docs/mpk.md) as library calls:
// lowered for where its task graph will run, the task graph compiled (step by step, with a hook
// after each), the persistent kernel's unit emitted. Structured results; printing is the caller's
// (the `weft mpk` commands, the Python binding).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/target.h"
#include "ir/graph.h"
#include "ir/interface.h"
#include "lower/plan.h"
#include "mpk/passes/pipeline.h"
#include "mpk/runtime/megakernel_program.h"

namespace weft {

// Where a task graph runs: on host threads with the CPU backend's block functions as task bodies
// (a CPU plan), or as one persistent kernel in host emulation (lowered for h100) or on this
// machine's GPU (lowered for its target).
enum class MpkPlatform : uint8_t { host, emulation, gpu };
std::string_view mpk_platform_name(MpkPlatform p);
// UserError for a name other than host, emulation, gpu.
MpkPlatform mpk_platform_by_name(std::string_view name);

struct MpkProgramOptions {
  MpkPlatform platform = MpkPlatform::host;
  // emulation, gpu: lower for this GPU target instead (no device needed: `weft mpk unit`).
  const Target* target = nullptr;
  int workers = 4;  // emulation, gpu: 0 is default_megakernel_workers
  Dispatch dispatch = Dispatch::hybrid;
  std::set<std::string> data_dependent;  // plan kernels (k0, k1, ...) dispatched JIT (hybrid)
  // Also the kernels loading a tensor of this prefix; empty: a declared decode step's attention
  // kernels (those loading a k_cache or v_cache of its interface), none otherwise.
  std::string data_dependent_reads;
  uint32_t schedulers = 1;  // scheduler threads or warps
  // emulation, gpu: the decode loop's tasks on the device (a decode-step program).
  bool decode_loop = false;
  // The decode interface (mpk/decode_interface.h) when the caller passes it rather than the
  // program declaring it.
  std::optional<ProgramInterface> decode;
};

// Worker CTAs when none are asked for: one per SM but one (left to the scheduler CTA, which must
// be resident too) on a GPU, 4 in emulation. UserError on gpu without a device.
int default_megakernel_workers(MpkPlatform platform);

// A program as the mega-kernel takes it: its plan for the platform and the options its task graph
// and persistent kernel are built with.
struct MpkProgram {
  std::string name;  // the program's, or the caller's fallback
  MpkPlatform platform = MpkPlatform::host;
  const Target* target = nullptr;
  ProgramPlan plan;
  MegakernelProgramOptions options;
  std::map<std::string, DType> declared;  // input dtypes (a CPU plan stores every tensor as f32)

  bool decoder() const;  // declares (or was passed) a decode interface
};

// Lowers `program` for the platform (cpu on host; the target, the device's or h100 otherwise) and
// resolves the options. `fallback_name` names an unnamed program. UserError for a bad option or
// interface, or gpu without a device.
MpkProgram prepare_megakernel(const Graph& program, const MpkProgramOptions& options,
                              const std::string& fallback_name = "program");
// A plan lowered already: the platform must suit its target (cpu for host, a GPU otherwise).
MpkProgram prepare_megakernel(ProgramPlan plan, const MpkProgramOptions& options);

// The task graph (mpk/passes/pipeline.h): through `stop_after` (a step; empty: all, verified and
// encoded), calling `after_step` after each step.
MpkCompiled compile_megakernel(const MpkProgram& p, const std::string& stop_after = "",
                               const MpkStepHook& after_step = {});

// The persistent kernel's unit as `weft mpk run --on gpu` compiles it (emulation, gpu only).
MegakernelUnit megakernel_unit(const MpkProgram& p);

}  // namespace weft
