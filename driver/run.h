// Driver: running a µGraph on host tensors with the reference interpreter or a backend, comparing
// two programs on the same inputs, and summarizing outputs, as library calls with structured
// results.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/target.h"
#include "core/tensor.h"
#include "interp/compare.h"
#include "ir/graph.h"
#include "runtime/program.h"

namespace weft {

// Called with a line saying which step starts (building with nvcc can take a while); optional.
using ProgressFn = std::function<void(const std::string& step)>;

struct RunOptions {
  std::optional<Backend> backend;  // nullopt: the reference interpreter
  // GPU backends: the target to lower for; empty: the device's (cuda) or h100 (cuda-emulation).
  // Other executors have their own and refuse one (UserError).
  std::string target;
  bool f32 = true;  // the interpreter's arithmetic (f32 or f64); backends have their own
  BuildOptions build;
  ProgressFn progress;
};

// True when the executor keeps the programs' declared dtypes (cuda, cuda-emulation): results are
// then compared within the output dtype's tolerance (tolerance_for(DType)).
bool keeps_declared_dtypes(const RunOptions& options);
// The tolerance an output of dtype `dtype` is compared within under `options`.
double output_tolerance(const RunOptions& options, DType dtype);

// Runs `graph` on `inputs` (its input order) and returns its outputs: the interpreter computes
// in f32 or f64 (options.f32), the cpu backend in f32, the GPU backends in the declared dtypes
// (inputs stored in them first).
std::vector<Tensor<double>> run_graph(const Graph& graph, const std::vector<Tensor<double>>& inputs,
                                      const RunOptions& options);

// Throws UserError (at `program_path`, or the differing value's location) unless `program` and
// `reference` have the same input and output types, matched by position (names may differ).
void require_same_signature(const Graph& program, const std::string& program_path,
                            const Graph& reference, const std::string& reference_path);

struct OutputComparison {
  std::string name;  // the program's output
  TensorType type;
  Comparison comparison;  // comparison.tolerance is the one used
};

struct ProgramComparison {
  std::vector<OutputComparison> outputs;
  bool all_ok = true;
};

// Runs `program` and `reference` on the same seeded inputs (interp/random_inputs.h) under
// `options` and compares each output of the program with the reference's within
// output_tolerance. Checks the signatures first (require_same_signature).
ProgramComparison compare_programs(const Graph& program, const std::string& program_path,
                                   const Graph& reference, const std::string& reference_path,
                                   uint64_t seed, const RunOptions& options);

// Statistics of one output, for a quick look (and a quick "did anything change").
struct OutputSummary {
  int64_t count = 0;  // elements
  double min = 0, max = 0, mean = 0, l2 = 0;
  std::vector<double> first;  // up to 4 leading values
  // FNV-1a over the f32 bit patterns: stable for f32 runs.
  uint64_t checksum = 0;
};
OutputSummary summarize_output(const Tensor<double>& t);

}  // namespace weft
