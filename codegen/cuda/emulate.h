// CUDA backend, host emulation: the generated .cu compiled as C++ with -DWEFT_HOST_EMULATION
// (every block's threads are std::threads), loaded and run on host buffers. This is how the
// CUDA code generator is tested on machines without a GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lower/plan.h"

namespace weft {

struct EmulationOptions {
  std::string cache_dir;  // empty: the runtime's cache directory (runtime/build_cache.h)
  std::string compiler = "g++";
  std::string flags = "-std=c++20 -O1 -x c++ -DWEFT_HOST_EMULATION -shared -fPIC -pthread";
};

class EmulatedProgram {
 public:
  ~EmulatedProgram();
  EmulatedProgram(const EmulatedProgram&) = delete;
  EmulatedProgram& operator=(const EmulatedProgram&) = delete;

  const ProgramPlan& plan() const { return plan_; }
  const std::string& source() const { return source_; }
  const std::string& artifact() const { return artifact_; }
  bool from_cache() const { return from_cache_; }

  // Runs weft_cuda_launch once on host copies of `inputs` (plan input order, row-major, rounded
  // to each tensor's plan dtype) and returns the outputs converted to float. Throws UserError
  // for wrong input sizes; a nonzero launch result is an internal error.
  std::vector<std::vector<float>> run(const std::vector<std::vector<float>>& inputs) const;

 private:
  friend std::unique_ptr<EmulatedProgram> compile_emulated_source(const ProgramPlan&,
                                                                  const std::string&,
                                                                  const EmulationOptions&);
  EmulatedProgram() = default;
  ProgramPlan plan_;
  std::string source_, artifact_;
  bool from_cache_ = false;
  void* handle_ = nullptr;
  void* entry_ = nullptr;
};

// Emits CUDA for a plan lowered for a GPU target, compiles it for host emulation (cached by a
// hash of the command and the source) and loads it.
std::unique_ptr<EmulatedProgram> compile_emulated(const ProgramPlan& plan,
                                                  const EmulationOptions& options = {});
// The same for a given unit of that plan (tests run edited units to show the emulation catches
// the edit).
std::unique_ptr<EmulatedProgram> compile_emulated_source(const ProgramPlan& plan,
                                                         const std::string& source,
                                                         const EmulationOptions& options = {});

}  // namespace weft
