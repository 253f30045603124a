// Lowering, code generation and building as one library call.
#include "driver/compile.h"

#include "core/error.h"
#include "lower/pipeline.h"
#include "lower/plan_text.h"
#include "runtime/cuda_runtime.h"

namespace weft {

CompiledCode compile_graph(const Graph& graph, const Target& target,
                           const CompileOptions& options) {
  CompiledCode c;
  c.plan = lower_graph(graph, target, options.stop_after);
  c.plan_text = print_plan(c.plan);
  c.backend = target.kind == TargetKind::cpu ? Backend::cpu : Backend::cuda;
  c.has_code = options.stop_after.empty() || options.stop_after == lowering_passes().back();
  if (c.has_code) {
    c.source = generate_source(c.plan, c.backend);
    c.source_extension = source_extension(c.backend);
  }
  return c;
}

BuildReport build_code(const CompiledCode& code, const BuildOptions& options) {
  WEFT_CHECK(code.has_code, "building {} without code (lowering stopped early)", code.plan.name);
  BuildReport r;
  if (code.backend == Backend::cuda && !cuda_runtime_built()) {
    r.skipped = "this weft was built without the CUDA toolkit";
    return r;
  }
  auto prog = build_program(code.plan, code.backend, code.source, options);
  r.built = true;
  r.artifact = prog->artifact();
  r.from_cache = prog->from_cache();
  return r;
}

}  // namespace weft
