// The CUDA backend in host emulation: the generated .cu compiled as C++ with
// -DWEFT_HOST_EMULATION (every block's threads are std::threads,
// codegen/cuda/device/emulation.cuh), loaded and run on host buffers in the plan's dtypes. This is
// how the CUDA code generator is tested on machines without a GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/program.h"

namespace weft {

class EmulatedProgram final : public Program {
 private:
  friend std::unique_ptr<EmulatedProgram> build_emulated_program(const ProgramPlan&,
                                                                 const std::string&,
                                                                 const BuildOptions&);
  EmulatedProgram(const ProgramPlan& plan, std::string source);
  // Inputs encoded in their plan dtypes; outputs and workspace filled with 0xff bytes (NaN in
  // every dtype, so an element the program never writes shows up).
  struct Buffers;
  Buffers buffers(const std::vector<std::vector<float>>& inputs) const;
  void launch(Buffers& b) const;
  std::vector<std::vector<float>> run_checked(
      const std::vector<std::vector<float>>& inputs) const override;
  Timing time_checked(const std::vector<std::vector<float>>& inputs, int warmup,
                      int reps) const override;
  void launch_raw_checked(void* const* inputs, void* const* outputs, void* workspace,
                          void* stream) const override;

  void* entry_ = nullptr;
};

// Compiles `source` (a unit of codegen/cuda/emit_cuda.h for `plan`, lowered for a GPU target; tests
// pass edited units to show the emulation catches the edit) with options.emulation's compiler,
// cached by a hash of the command and the source, and loads it. A compiler failure is an internal
// error.
std::unique_ptr<EmulatedProgram> build_emulated_program(const ProgramPlan& plan,
                                                        const std::string& source,
                                                        const BuildOptions& options = {});
// Compiles a .cu unit as host C++ (options.emulation), cached; the result says whether the
// compiler failed.
CacheResult build_emulated_library(const std::string& source, const BuildOptions& options = {});

}  // namespace weft
