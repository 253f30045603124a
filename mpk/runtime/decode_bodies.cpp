// The decode loop's hand-written task bodies: the options the plan's bodies are emitted with
// beside them, and the text that runs them.
#include "mpk/runtime/decode_bodies.h"

#include <fmt/format.h>

#include "codegen/cuda/emit_cuda.h"
#include "core/embedded_files.h"
#include "core/error.h"
#include "mpk/decode_layout.h"
#include "mpk/passes/add_decode_tasks.h"
#include "mpk/passes/decompose.h"

namespace weft {

int64_t decode_bodies_smem_bytes(int worker_threads) {
  return 8 * int64_t{worker_threads};  // the argmax's value and index per thread
}

TaskBodyOptions with_decode_bodies(const ProgramPlan& plan, TaskBodyOptions bodies) {
  // The decode bodies' shared memory depends on the worker's threads: resolve them first.
  bodies.worker_threads = fit_task_bodies(plan, bodies).worker_threads;
  bodies.extra_task_function = kDecodeTaskFunction;
  bodies.extra_smem_bytes = decode_bodies_smem_bytes(bodies.worker_threads);
  // The plan's kernels write no input; the decode tasks write X, the tables, the caches and M.
  bodies.read_only_tensors = unwritten_inputs(add_decode_tasks(plan_tensors(plan), plan));
  return bodies;
}

std::string emit_decode_task_bodies(const ProgramPlan& plan) {
  const DecodeInterface in = decode_interface(plan);
  const DecodeDeviceLayout layout = decode_device_layout(plan, in);
  auto type = [&](const std::string& name) {
    const PlanBuffer* t = plan.find_tensor(name);
    WEFT_CHECK(t && t->contiguous_dim == static_cast<int>(t->shape.size()) - 1,
               "decode tensor {} is not a row-major device tensor", name);
    return std::string(cuda_ctype(t->dtype));
  };
  auto input = [&](size_t slot, bool is_const) {
    const std::string& n = plan.inputs[slot];
    return fmt::format("static_cast<{}{}*>(inputs[{}])", is_const ? "const " : "", type(n), slot);
  };
  auto output = [&](size_t slot) {
    const std::string& n = plan.outputs[slot];
    return fmt::format("static_cast<const {}*>(outputs[{}])", type(n), slot);
  };
  std::string s = fmt::format(
      "\n// The decode loop's task bodies for '{}' (mpk/runtime/decode_bodies.h); the decode state "
      "is at\n"
      "// workspace byte {}.\n",
      plan.name, layout.state_offset);
  s += expand_embedded("mpk/device/decode_bodies.cuh");
  s += fmt::format(
      "\nWEFT_DEV void {}(uint32_t op, int, int, int, [[maybe_unused]] "
      "unsigned char* smem, void* const* inputs, [[maybe_unused]] void* const* outputs, unsigned "
      "char* workspace) {{\n"
      "  [[maybe_unused]] float* const state = reinterpret_cast<float*>(workspace + {});\n"
      "  switch (op) {{\n",
      kDecodeTaskFunction, layout.state_offset);
  const std::vector<DecodeOp> ops = decode_ops(in);
  for (size_t j = 0; j < ops.size(); ++j) {
    s += fmt::format("    case {}:  // {}\n", j, ops[j].name);
    switch (ops[j].body) {
      case DecodeBody::embed:
        if (in.emb)
          s += fmt::format(
              "      weft_decode_embed<weft_mpk_worker_threads>({}, {}, {}, 1, {}, state);\n",
              input(in.x, false), input(*in.emb, true), in.dim, in.vocab);
        else
          s += fmt::format(
              "      weft_decode_embed<weft_mpk_worker_threads>({}, reinterpret_cast<const "
              "float*>(workspace + {}), {}, {}, 1, state);\n",
              input(in.x, false), layout.table_offset, in.dim, in.dim);
        break;
      case DecodeBody::rope_tables:
        s += fmt::format(
            "      weft_decode_rope_tables<weft_mpk_worker_threads>({}, {}, reinterpret_cast<const "
            "double*>(workspace + {}), {}, state);\n",
            input(*in.cos, false), input(*in.sin, false), layout.inv_freq_offset, in.rope_dim / 2);
        break;
      case DecodeBody::finish:
        for (const DecodeLayer& y : in.layers)
          s += fmt::format(
              "      weft_decode_kv_append<weft_mpk_worker_threads>({}, {}, {}, {}, {}, {}, {}, "
              "state);\n",
              input(y.kc, false), input(y.vc, false), output(y.kn), output(y.vn), y.heads,
              y.head_dim, in.ctx);
        s += fmt::format(
            "      weft_decode_argmax_advance<weft_mpk_worker_threads>({}, {}, {}, state, "
            "reinterpret_cast<float*>(smem), reinterpret_cast<int*>(smem + 4 * "
            "weft_mpk_worker_threads));\n",
            output(in.logits), in.vocab, input(in.m, false));
        break;
    }
    s += "      return;\n";
  }
  s += "    default:\n      return;\n  }\n}\n";
  return s;
}

}  // namespace weft
