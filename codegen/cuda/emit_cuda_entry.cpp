// CUDA emission of the unit's entry points: the host launcher running the plan's kernels in order,
// or, for task bodies, weft_mpk_task dispatching a task to its kernel's body.
#include "codegen/cuda/cuda_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.h"

namespace weft::cuda_emit {

void Emitter::launcher() {
  line("");
  line("extern \"C\" const char* weft_cuda_plan_name(void) {{ return \"{}\"; }}", p_.name);
  line("");
  line(
      "extern \"C\" int weft_cuda_launch(void* const* inputs, void* const* outputs, "
      "void* workspace, void* stream) {{");
  ++ind_;
  tensor_pointers(true);
  for (const KernelPlan& k : p_.kernels) {
    if (k.library) {
      const Step& s = k.loop_steps.at(0);
      if (s.op == OpKind::matmul && !is_device_kernel_call(s)) {
        library_matmul(k);
        continue;
      }
      std::vector<Operand> ins, outs;
      for (const std::string& n : s.inputs) ins.push_back(device(n));
      for (const std::string& n : s.outputs) outs.push_back(device(n));
      int64_t units = library_units(s, ins, outs);
      int64_t grid = std::clamp<int64_t>((units + kLibraryThreads - 1) / kLibraryThreads, 1,
                                         kMaxLibraryBlocks);
      line("WEFT_LAUNCH({}, {}, 1, 1, {}, 0, stream, {});", code_of_.at(k.name), grid,
           kLibraryThreads, args(k));
    } else {
      const std::string& code = code_of_.at(k.name);
      if (k.smem_bytes > kDefaultSmemLimit) line("WEFT_SET_SMEM({0}, {0}_smem_bytes);", code);
      line(
          "WEFT_LAUNCH({0}, {0}_grid_x, {0}_grid_y, {0}_grid_z, {0}_threads, {0}_smem_bytes, "
          "stream, {1});",
          code, args(k));
    }
  }
  line("return 0;");
  close();
}

void Emitter::task_switch() {
  line("");
  const std::string& extra = fit_->extra_task_function;
  if (!extra.empty())
    line(
        "WEFT_DEV void {}(uint32_t kernel, int bx, int by, int bz, unsigned char* smem, void* "
        "const* inputs, void* const* outputs, unsigned char* workspace);",
        extra);
  line(
      "WEFT_DEV void weft_mpk_task(uint32_t kernel, [[maybe_unused]] int bx, [[maybe_unused]] "
      "int by, [[maybe_unused]] int bz, [[maybe_unused]] unsigned char* smem, void* const* "
      "inputs, void* const* outputs, unsigned char* workspace) {{");
  ++ind_;
  line("weft_task_body_entry();");
  tensor_pointers(false);
  // Two switches: the kernel picks its tensors P and the code it runs (share_identical_code),
  // then each code is inlined once, on P, however many kernels run it.
  std::map<std::string, size_t> code_index;  // first kernel of a code -> its case
  size_t arity = 1;
  for (const KernelPlan& k : p_.kernels) {
    code_index.emplace(code_of_.at(k.name), code_index.size());
    arity = std::max(arity, tensor_args(k).size());
  }
  line("void* P[{}];", arity);
  line("uint32_t code = 0;");
  open("switch (kernel) {");
  for (size_t i = 0; i < p_.kernels.size(); ++i) {
    const KernelPlan& k = p_.kernels[i];
    std::string picks;
    const std::vector<size_t> tensors = tensor_args(k);
    for (size_t j = 0; j < tensors.size(); ++j)
      picks += fmt::format(" P[{}] = T{};", j, tensors[j]);
    line("case {}: code = {};{} break;  // {}", i, code_index.at(code_of_.at(k.name)), picks,
         k.name);
  }
  if (extra.empty()) {
    line("default:  // not a kernel of this plan: the task graph's decoder checks indices");
    line("  return;");
  } else {
    line("default:  // a body beyond the plan (TaskBodyOptions::extra_task_function)");
    line("  {}(kernel - {}u, bx, by, bz, smem, inputs, outputs, workspace);", extra,
         p_.kernels.size());
    line("  return;");
  }
  close();
  open("switch (code) {");
  for (const KernelPlan& k : p_.kernels) {
    if (code_of_.at(k.name) != k.name) continue;
    std::string casts;
    const std::vector<size_t> tensors = tensor_args(k);
    for (size_t j = 0; j < tensors.size(); ++j)
      casts += fmt::format("static_cast<decltype(T{})>(P[{}]), ", tensors[j], j);
    line("case {}:", code_index.at(k.name));
    line("  if (weft_tid() < {0}_threads) {0}_block({1}bx, by, bz, smem);", k.name, casts);
    line("  return;");
  }
  line("default:");
  line("  return;");
  close();
  close();
}

void Emitter::tensor_pointers(bool stream) {
  line("[[maybe_unused]] unsigned char* const ws = static_cast<unsigned char*>(workspace);");
  line("(void)inputs;");
  line("(void)outputs;");
  if (stream) line("(void)stream;");
  for (size_t i = 0; i < p_.tensors.size(); ++i) {
    const PlanBuffer& t = p_.tensors[i];
    const char* ty = ctype(t.dtype);
    if (t.role == TensorRole::input) {
      auto pos = std::find(p_.inputs.begin(), p_.inputs.end(), t.name) - p_.inputs.begin();
      line("[[maybe_unused]] {0}* const T{1} = static_cast<{0}*>(inputs[{2}]);  // {3}", ty, i, pos,
           t.name);
    } else if (t.role == TensorRole::output) {
      auto pos = std::find(p_.outputs.begin(), p_.outputs.end(), t.name) - p_.outputs.begin();
      line("[[maybe_unused]] {0}* const T{1} = static_cast<{0}*>(outputs[{2}]);  // {3}", ty, i,
           pos, t.name);
    } else {
      WEFT_CHECK(t.offset >= 0, "temp {} has no workspace offset", t.name);
      line("[[maybe_unused]] {0}* const T{1} = reinterpret_cast<{0}*>(ws + {2});  // {3}", ty, i,
           t.offset, t.name);
    }
  }
}

}  // namespace weft::cuda_emit
