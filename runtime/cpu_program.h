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

 private:
  friend std::unique_ptr<CpuProgram> build_cpu_program(const ProgramPlan&, const std::string&,
                                                       const BuildOptions&);
  CpuProgram(const ProgramPlan& plan, std::string source);
  std::vector<std::vector<float>> run_checked(
      const std::vector<std::vector<float>>& inputs) const override;
  Timing time_checked(const std::vector<std::vector<float>>& inputs, int warmup,
                      int reps) const override;

  void* entry_ = nullptr;
  mutable std::vector<float> workspace_;
};

// Compiles `source` (a unit with the weft_main ABI of codegen/cpu/emit_cpu.h, for `plan`, which
// is lowered for a CPU target) with options.cpu's compiler, or finds it in the cache, and loads
// it. A compiler failure is an internal error: generated code must compile.
std::unique_ptr<CpuProgram> build_cpu_program(const ProgramPlan& plan, const std::string& source,
                                              const BuildOptions& options = {});

}  // namespace weft
