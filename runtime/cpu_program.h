// The CPU backend's program: generated C++ built with the host compiler (cached by content hash),
// loaded into this process and run on host buffers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/program.h"

namespace weft {

class CpuProgram final : public Program {
 public:
  // Runs once without copies. inputs[i] / outputs[j] hold numel(shape) floats each, row-major, in
  // the plan's input / output order (not checked: the caller sized them from the plan).
  void run(const std::vector<const float*>& inputs, const std::vector<float*>& outputs) const;
  using Program::run;
  // One task of the task-graph runtime (mpk/), on the calling thread: block (bx, by, bz) of
  // graph-defined kernel `kernel` over `arena` (at least the kernel's smem bytes, 4 at least), or
  // the whole library kernel `kernel`. `tensors` holds the plan's device tensors in plan order
  // (inputs, outputs, workspace slices). Reentrant: concurrent calls may run different tasks.
  void run_task(float* const* tensors, int kernel, int64_t bx, int64_t by, int64_t bz,
                float* arena) const;

 private:
  friend std::unique_ptr<CpuProgram> build_cpu_program(const ProgramPlan&, const std::string&,
                                                       const BuildOptions&);
  CpuProgram(const ProgramPlan& plan, std::string source);
  std::vector<std::vector<float>> run_checked(
      const std::vector<std::vector<float>>& inputs) const override;
  Timing time_checked(const std::vector<std::vector<float>>& inputs, int warmup,
                      int reps) const override;

  void* entry_ = nullptr;
  void* task_entry_ = nullptr;
  mutable std::vector<float> workspace_;
};

// Compiles `source` (a unit with the weft_main ABI of codegen/cpu/emit_cpu.h, for `plan`, which
// is lowered for a CPU target) with options.cpu's compiler, or finds it in the cache, and loads
// it. A compiler failure is an internal error: generated code must compile.
std::unique_ptr<CpuProgram> build_cpu_program(const ProgramPlan& plan, const std::string& source,
                                              const BuildOptions& options = {});

}  // namespace weft
