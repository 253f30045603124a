// Task bodies for the persistent mega-kernel: the worker CTA's size and shared-memory budget, the
// check that every body fits them, the device GEMM's tiles, and the unit that runs the bodies on
// their own (the bodies' text itself comes from the CUDA emitter, emit_cuda.cpp).
#include "codegen/cuda/emit_task_bodies.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "codegen/cuda/prelude.h"
#include "core/error.h"
#include "core/target.h"

namespace weft {

namespace {

constexpr int kLibraryOnlyWorkerThreads = 256;
constexpr int64_t kDefaultSmemLimit = 48 * 1024;  // dynamic shared memory without opt-in

int64_t pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace

CtaGemmTile cta_gemm_tile(int64_t m, int64_t n) {
  // At most 4096 outputs per tile (16 per thread of a 256-thread worker); short, wide products
  // (decode GEMVs: m of 1 to 16) take wide tiles instead of padding rows.
  CtaGemmTile t;
  t.bm = static_cast<int>(std::min<int64_t>(64, pow2_at_least(m)));
  t.bn = std::min(256, std::max(64, 4096 / t.bm));
  t.bn = static_cast<int>(std::min<int64_t>(t.bn, std::max<int64_t>(32, pow2_at_least(n))));
  return t;
}

TaskBodyFit fit_task_bodies(const ProgramPlan& plan, const TaskBodyOptions& options) {
  const Target& target = target_by_name(plan.target);
  if (target.kind != TargetKind::gpu)
    throw UserError(fmt::format(
        "task bodies of {}: the plan is lowered for {}, not a GPU target (use --target h100, "
        "h200 or a100)",
        plan.name, plan.target));
  TaskBodyFit fit;
  int graph_threads = 0;
  for (const KernelPlan& k : plan.kernels)
    if (!k.library) graph_threads = std::max(graph_threads, static_cast<int>(k.threads));
  fit.worker_threads = options.worker_threads;
  if (fit.worker_threads == 0)
    fit.worker_threads =
        graph_threads == 0 ? kLibraryOnlyWorkerThreads : (graph_threads + 31) / 32 * 32;
  WEFT_CHECK(options.runtime_threads >= 0 && options.runtime_threads % 32 == 0,
             "{} runtime threads", options.runtime_threads);
  const int max_threads = std::min(1024, target.max_threads_per_block) - options.runtime_threads;
  if (fit.worker_threads < 32 || fit.worker_threads % 32 != 0 || fit.worker_threads > max_threads)
    throw UserError(fmt::format(
        "task bodies of {}: worker CTAs of {} threads; they need a multiple of 32 from 32 to {}{}",
        plan.name, fit.worker_threads, max_threads,
        options.runtime_threads == 0
            ? ""
            : fmt::format(" ({} more are the persistent kernel's)", options.runtime_threads)));
  if (options.runtime_smem_reserve_bytes < 0 || options.smem_budget_bytes < 0)
    throw UserError(
        fmt::format("task bodies of {}: negative shared-memory budget or reserve", plan.name));
  fit.smem_budget_bytes = options.smem_budget_bytes != 0
                              ? options.smem_budget_bytes
                              : target.smem_per_block_bytes - options.runtime_smem_reserve_bytes;
  if (options.extra_smem_bytes < 0 || options.extra_smem_bytes > fit.smem_budget_bytes)
    throw UserError(fmt::format(
        "task bodies of {}: the bodies beyond the plan ({}) need {} bytes of shared memory, but "
        "worker CTAs have {}",
        plan.name, options.extra_task_function, options.extra_smem_bytes, fit.smem_budget_bytes));
  fit.body_smem_bytes = options.extra_smem_bytes;
  fit.extra_task_function = options.extra_task_function;
  if (!options.read_only_tensors.empty()) {
    std::set<std::string> written;
    for (const KernelPlan& k : plan.kernels)
      for (const auto* steps : {&k.loop_steps, &k.post_steps})
        for (const Step& s : *steps)
          if (s.kind == StepKind::store || s.kind == StepKind::call)
            written.insert(s.outputs.begin(), s.outputs.end());
    for (const std::string& name : options.read_only_tensors) {
      const PlanBuffer* t = plan.find_tensor(name);
      WEFT_CHECK(t && t->role == TensorRole::input && written.count(name) == 0,
                 "{}: read-only tensor {} is not an input no kernel writes", plan.name, name);
      fit.read_only_tensors.insert(name);
    }
  }
  for (const KernelPlan& k : plan.kernels) {
    TaskBodyFigure f{
        k.name, k.library, false, fit.worker_threads, 0, k.library ? library_tasks(k) : 1};
    if (k.library) {
      const Step& s = k.loop_steps.at(0);
      if (s.op == OpKind::matmul && !is_device_kernel_call(s)) {
        const Shape& c = plan.find_tensor(s.outputs.at(0))->shape;
        f.gemm = true;
        f.smem_bytes = cta_gemm_tile(c[c.size() - 2], c[c.size() - 1]).smem_bytes();
      }
    } else {
      f.threads = static_cast<int>(k.threads);
      f.smem_bytes = k.smem_bytes;
      f.tasks = k.num_blocks();
      if (f.threads > fit.worker_threads)
        throw UserError(fmt::format(
            "task bodies of {}: kernel {} needs {} threads per block, but worker CTAs have {} "
            "(TaskBodyOptions::worker_threads)",
            plan.name, k.name, f.threads, fit.worker_threads));
    }
    if (f.smem_bytes > fit.smem_budget_bytes)
      throw UserError(fmt::format(
          "task bodies of {}: kernel {} needs {} bytes of shared memory, but worker CTAs have {} "
          "({} per block on {}, {} reserved for the runtime)",
          plan.name, k.name, f.smem_bytes, fit.smem_budget_bytes, target.smem_per_block_bytes,
          target.name, options.runtime_smem_reserve_bytes));
    fit.body_smem_bytes = std::max(fit.body_smem_bytes, f.smem_bytes);
    fit.max_body_threads = std::max(fit.max_body_threads, f.threads);
    fit.bodies.push_back(std::move(f));
  }
  return fit;
}

std::string emit_task_bodies_check_unit(const ProgramPlan& plan, const TaskBodyOptions& options,
                                        TaskBodyLaunch launch, const CheckUnitExtras& extras) {
  const TaskBodyFit fit = fit_task_bodies(plan, options);
  WEFT_CHECK(extras.before.empty() && extras.after.empty() ? extras.text.empty()
                                                           : !options.extra_task_function.empty(),
             "bodies beyond the plan of {} without an extra task function", plan.name);
  // Every task in launch order: the extras before, the plan's kernels (library: one block), the
  // extras after, as (kernel index, grid, name).
  struct Launch {
    uint64_t kernel;
    std::array<int64_t, 3> grid;
    std::string name;
  };
  std::vector<Launch> order;
  for (const CheckUnitExtras::Body& b : extras.before)
    order.push_back({plan.kernels.size() + b.index, {1, 1, 1}, b.name});
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const KernelPlan& k = plan.kernels[i];
    order.push_back(
        {i, k.library ? std::array<int64_t, 3>{library_tasks(k), 1, 1} : k.grid, k.name});
  }
  for (const CheckUnitExtras::Body& b : extras.after)
    order.push_back({plan.kernels.size() + b.index, {1, 1, 1}, b.name});
  const size_t ni = std::max<size_t>(1, plan.inputs.size()),
               no = std::max<size_t>(1, plan.outputs.size());
  std::string out = fmt::format(
      "// Generated by weft: the task bodies of '{}' run {} through the weft_cuda_launch ABI\n"
      "// (emit_task_bodies.h). Do not edit.\n",
      plan.name,
      launch == TaskBodyLaunch::one_cta ? "by one worker CTA, every task in launch order"
                                        : "one launch per kernel");
  out += cuda_prelude();
  out += emit_cuda_task_bodies(plan, options);
  out += extras.text;
  // The pointer arrays travel by value: a kernel cannot read the host's arrays.
  out += fmt::format(
      "\nstruct weft_mpk_args {{\n  void* inputs[{}];\n  void* outputs[{}];\n"
      "  unsigned char* workspace;\n}};\n\n",
      ni, no);
  std::string launches;
  if (launch == TaskBodyLaunch::one_cta) {
    out += "WEFT_KERNEL(weft_mpk_worker_threads) weft_mpk_check(weft_mpk_args a) {\n";
    for (const Launch& l : order) {
      const int64_t gx = l.grid[0], gy = l.grid[1];
      out += fmt::format(
          "  for (int b = 0; b < {}; ++b) {{  // {}\n"
          "    weft_mpk_task({}u, b % {}, b / {} % {}, b / {}, weft_smem_base(), a.inputs, "
          "a.outputs, a.workspace);\n"
          "    weft_sync();\n  }}\n",
          gx * gy * l.grid[2], l.name, l.kernel, gx, gx, gy, gx * gy);
    }
    out += "}\n";
    launches =
        "  WEFT_LAUNCH(weft_mpk_check, 1, 1, 1, weft_mpk_worker_threads, "
        "weft_mpk_body_smem_bytes, stream, a);\n";
  } else {
    out +=
        "WEFT_KERNEL(weft_mpk_worker_threads) weft_mpk_check(uint32_t kernel, weft_mpk_args a) {\n"
        "  weft_mpk_task(kernel, weft_bid_x(), weft_bid_y(), weft_bid_z(), weft_smem_base(), "
        "a.inputs, a.outputs, a.workspace);\n}\n";
    for (const Launch& l : order)
      launches += fmt::format(
          "  WEFT_LAUNCH(weft_mpk_check, {}, {}, {}, weft_mpk_worker_threads, "
          "weft_mpk_body_smem_bytes, stream, {}u, a);  // {}\n",
          l.grid[0], l.grid[1], l.grid[2], l.kernel, l.name);
  }
  out += fmt::format(
      "\nextern \"C\" const char* weft_cuda_plan_name(void) {{ return \"{}\"; }}\n\n"
      "extern \"C\" int weft_cuda_launch(void* const* inputs, void* const* outputs, "
      "void* workspace, void* stream) {{\n"
      "  weft_mpk_args a{{}};\n"
      "  for (int i = 0; i < {}; ++i) a.inputs[i] = inputs[i];\n"
      "  for (int i = 0; i < {}; ++i) a.outputs[i] = outputs[i];\n"
      "  a.workspace = static_cast<unsigned char*>(workspace);\n"
      "  (void)stream;\n",
      plan.name, plan.inputs.size(), plan.outputs.size());
  if (fit.body_smem_bytes > kDefaultSmemLimit)
    out += "  WEFT_SET_SMEM(weft_mpk_check, weft_mpk_body_smem_bytes);\n";
  out += launches + "  return 0;\n}\n";
  return out;
}

}  // namespace weft
