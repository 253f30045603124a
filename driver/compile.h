// Driver: compiling a µGraph for a target as a library call. Lowers it to its kernel plan (or the
// plan after one pass), generates the target backend's code and builds it, with structured results
// a CLI or a binding prints or keeps.
#pragma once

#include <string>

#include "core/target.h"
#include "ir/graph.h"
#include "lower/plan.h"
#include "runtime/program.h"

namespace weft {

struct CompileOptions {
  std::string stop_after;  // a lowering pass (lower/pipeline.h); empty: the whole pipeline
};

struct CompiledCode {
  ProgramPlan plan;
  std::string plan_text;           // print_plan(plan)
  Backend backend = Backend::cpu;  // the target's own: cpu for CPU targets, cuda for GPUs
  // Code exists only for a fully lowered plan (stop_after empty or the last pass).
  bool has_code = false;
  std::string source;            // generate_source(plan, backend)
  std::string source_extension;  // ".cpp" or ".cu"
};

// Lowers `graph` for `target` and generates its code. Throws UserError for an unknown pass.
CompiledCode compile_graph(const Graph& graph, const Target& target,
                           const CompileOptions& options = {});

struct BuildReport {
  bool built = false;       // false: not built, `skipped` says why
  std::string skipped;      // "this weft was built without the CUDA toolkit"
  std::string artifact;     // the shared library
  bool from_cache = false;  // no compiler ran
};

// Builds the code (cached) as the runtime will load it: the host compiler for CPU code, nvcc for
// CUDA (needs the toolkit, not a GPU; without the toolkit the report says it was skipped). Throws
// UserError when nvcc fails; the code must exist (has_code).
BuildReport build_code(const CompiledCode& code, const BuildOptions& options = {});

}  // namespace weft
