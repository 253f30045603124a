// Runtime API: compile a µGraph for a target (cached by content hash), run it on user buffers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/target.h"
#include "interp/tensor.h"
#include "ir/graph.h"
#include "lower/plan.h"

namespace weft {

struct CompileOptions {
  std::string cache_dir;  // empty: $WEFT_CACHE_DIR, $XDG_CACHE_HOME/weft, ~/.cache/weft, /tmp
  std::string compiler = "c++";
  // -fopenmp-simd honours the `omp simd` hints of the generated loops without an OpenMP runtime.
  std::string flags = "-std=c++17 -O3 -march=native -shared -fPIC -fopenmp-simd";
};

// A program compiled for the CPU and loaded into this process.
class CompiledProgram {
 public:
  ~CompiledProgram();
  CompiledProgram(const CompiledProgram&) = delete;
  CompiledProgram& operator=(const CompiledProgram&) = delete;

  const ProgramPlan& plan() const { return plan_; }
  const std::string& source() const { return source_; }
  const std::string& artifact() const { return artifact_; }  // the shared object's path
  bool from_cache() const { return from_cache_; }            // no compiler ran

  // Runs once. inputs[i] / outputs[j] hold numel(shape) floats each, row-major, in the plan's
  // input / output order. Not reentrant: one call at a time per CompiledProgram (the workspace is
  // shared).
  void run(const std::vector<const float*>& inputs, const std::vector<float*>& outputs) const;
  // Convenience: owns the outputs. Throws UserError when the input sizes do not match.
  std::vector<std::vector<float>> run(const std::vector<std::vector<float>>& inputs) const;

 private:
  friend std::unique_ptr<CompiledProgram> compile_plan(const ProgramPlan&, const CompileOptions&);
  CompiledProgram() = default;
  ProgramPlan plan_;
  std::string source_, artifact_;
  bool from_cache_ = false;
  void* handle_ = nullptr;
  void* entry_ = nullptr;
  mutable std::vector<float> workspace_;
};

// Lowers `graph` for a CPU target (lower/pipeline.h) and compiles it. Throws UserError for GPU
// targets (their backend emits CUDA from the same plan; see `weft compile`).
std::unique_ptr<CompiledProgram> compile_program(const Graph& graph, const Target& target,
                                                 const CompileOptions& options = {});
// Emits C++ for a lowered CPU plan, compiles it (or finds it in the cache) and loads it.
std::unique_ptr<CompiledProgram> compile_plan(const ProgramPlan& plan,
                                              const CompileOptions& options = {});

// Compiles `graph` for the CPU (cached) and runs it on `inputs` (converted to f32), returning the
// outputs as doubles: the interpreter's calling convention, for `weft run --backend cpu`.
std::vector<Tensor<double>> run_on_cpu(const Graph& graph,
                                       const std::vector<Tensor<double>>& inputs);

// The directory compiled artifacts are cached in.
std::string cache_directory(const CompileOptions& options);

}  // namespace weft
