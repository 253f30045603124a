// CUDA emission of library kernels: grid-stride kernels, cuBLAS calls for matmuls, and in task
// bodies CTA-level loops or the device GEMM.
#include "codegen/cuda/cuda_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "codegen/cuda/emit_task_bodies.h"
#include "codegen/cuda/model_kernel_families.h"
#include "core/error.h"

namespace weft::cuda_emit {

int64_t Emitter::library_units(const Step& s, const std::vector<Operand>& ins,
                               const std::vector<Operand>& outs) {
  if (is_device_kernel_call(s)) return s.attrs.get_int("dk_work");
  if (op_info(s.op).op_class == OpClass::reduction) {
    int64_t dim = s.attrs.get_int("dim");
    int64_t group = ins[0].shape[dim] / outs[0].shape[dim];
    return numel(outs[0].shape) * (group >= 16 ? 32 : 1);
  }
  int64_t units = 0;
  for (const Operand& o : outs) units = std::max(units, numel(o.shape));
  for (const Operand& o : ins) units = std::max(units, numel(o.shape));
  return units;
}

void Emitter::library_kernel(const KernelPlan& k) {
  const Step& s = k.loop_steps.at(0);
  if (s.op == OpKind::matmul && !is_device_kernel_call(s)) return;  // cuBLAS, from the launcher
  line("// kernel {}: library {}", k.name, op_info(s.op).name);
  line("WEFT_KERNEL({}) {}({}) {{", kLibraryThreads, k.name, params(k));
  ++ind_;
  library_loops(s, Workers{"weft_gtid()", "weft_gthreads()", "int64_t"});
  close();
}

void Emitter::device_kernel_call(const Step& s, const Workers& w) {
  const DkFamilyInfo& f = dk_family(static_cast<DkFamily>(s.attrs.get_int("dk")));
  const std::vector<int64_t>& words = s.attrs.get_list("dk_args");
  const std::vector<int64_t>& ptrs = s.attrs.get_list("dk_ptrs");
  WEFT_CHECK(words.size() * 8 == f.args_bytes && ptrs.size() % 3 == 0,
             "device-kernel call of {}: {} argument words, {} pointer entries", f.name,
             words.size(), ptrs.size());
  line("// the model kernel {} (for {}), its arguments as recorded, pointers set here", f.name,
       op_info(s.op).name);
  open("{");
  std::string init;
  for (int64_t word : words)
    init += fmt::format("{}0x{:x}ull", init.empty() ? "" : ", ", static_cast<uint64_t>(word));
  line("static_assert(sizeof({}_args) == {}, \"argument struct of another size\");", f.name,
       f.args_bytes);
  line("const uint64_t words_[] = {{{}}};", init);
  line("{}_args a_;", f.name);
  line("memcpy(&a_, words_, sizeof a_);");
  for (size_t i = 0; i < ptrs.size(); i += 3) {
    const DkPointerField& field = f.pointers.at(static_cast<size_t>(ptrs[i]));
    const auto operand = static_cast<size_t>(ptrs[i + 1]);
    const std::string& tensor =
        operand < s.inputs.size() ? s.inputs.at(operand) : s.outputs.at(operand - s.inputs.size());
    line("a_.{0} = (decltype(+a_.{0}))(reinterpret_cast<{1}unsigned char*>({2}) + {3});",
         field.name, field.written ? "" : "const ", device(tensor).ptr, ptrs[i + 2]);
  }
  line("{}_body(a_, {}, {});", f.name, w.first, w.step);
  close();
}

void Emitter::library_loops(const Step& s, const Workers& w) {
  if (is_device_kernel_call(s)) return device_kernel_call(s, w);
  std::vector<Operand> ins, outs;
  for (const std::string& n : s.inputs) ins.push_back(device(n));
  for (const std::string& n : s.outputs) outs.push_back(device(n));
  OpClass c = op_info(s.op).op_class;
  if (c == OpClass::unary || c == OpClass::binary)
    elementwise(s, ins, outs[0], w);
  else if (c == OpClass::reduction)
    reduction(s, ins[0], outs[0], w);
  else if (c == OpClass::movement)
    movement(s, ins, outs, w);
  else
    WEFT_CHECK(false, "no CUDA library loops for {}", op_info(s.op).name);
}

Emitter::LibraryMatmul Emitter::library_matmul_shape(const KernelPlan& k) const {
  const Step& s = k.loop_steps.at(0);
  Operand a = device(s.inputs[0]), b = device(s.inputs[1]), c = device(s.outputs[0]);
  size_t r = c.shape.size();
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < r; ++d) batch *= c.shape[d];
  return LibraryMatmul{a, b, c, r, c.shape[r - 2], c.shape[r - 1], a.shape[r - 1], batch};
}

std::string Emitter::batch_base(const LibraryMatmul& mm, const Operand& o) {
  std::string e = "0";
  int64_t inner = mm.batch;
  for (size_t d = 0; d + 2 < mm.r; ++d) {
    inner /= mm.c.shape[d];
    if (o.shape[d] != 1)
      e += fmt::format(" + (bb / {}) % {} * {}", inner, mm.c.shape[d], o.strides[d]);
  }
  return e;
}

void Emitter::library_matmul(const KernelPlan& k) {
  const LibraryMatmul mm = library_matmul_shape(k);
  const Operand &a = mm.a, &b = mm.b, &c = mm.c;
  const size_t r = mm.r;
  const int64_t m = mm.m, n = mm.n, kd = mm.kd, batch = mm.batch;
  // One strided-batched call when each operand has all of C's batch dims or none of them.
  auto stride_of = [&](const Operand& o) -> std::optional<int64_t> {
    bool all = true, none = true;
    for (size_t d = 0; d + 2 < r; ++d) {
      all = all && o.shape[d] == c.shape[d];
      none = none && o.shape[d] == 1;
    }
    if (all) return o.shape[r - 2] * o.shape[r - 1];
    if (none) return 0;
    return std::nullopt;
  };
  line("// kernel {}: library matmul (cuBLAS)", k.name);
  auto sa = stride_of(a), sb = stride_of(b);
  if (sa && sb) {
    line("if (int e_ = weft_gemm({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, stream)) return e_;",
         gemm_code(c.dtype), m, n, kd, a.ptr, *sa, b.ptr, *sb, c.ptr, m * n, batch);
    return;
  }
  open(fmt::format("for (int64_t bb = 0; bb < {}; ++bb) {{", batch));
  auto base = [&](const Operand& o) { return batch_base(mm, o); };
  line(
      "if (int e_ = weft_gemm({}, {}, {}, {}, {} + {}, 0, {} + {}, 0, {} + {}, 0, 1, stream)) "
      "return e_;",
      gemm_code(c.dtype), m, n, kd, a.ptr, base(a), b.ptr, base(b), c.ptr, base(c));
  close();
}

void Emitter::library_body(const KernelPlan& k) {
  const TaskBodyFigure& f = fit_->bodies.at(static_cast<size_t>(&k - p_.kernels.data()));
  const Step& s = k.loop_steps.at(0);
  line("// kernel {}: library {}, a task body on the worker's {} threads", k.name,
       op_info(s.op).name, f.threads);
  line("[[maybe_unused]] constexpr int {}_threads = {};", k.name, f.threads);
  line("[[maybe_unused]] constexpr int {}_smem_bytes = {};", k.name, f.smem_bytes);
  line("[[maybe_unused]] constexpr int {0}_grid_x = 1, {0}_grid_y = 1, {0}_grid_z = 1;", k.name);
  line(
      "WEFT_BLOCK_FN void {}_block({}, [[maybe_unused]] const int bx, [[maybe_unused]] const int "
      "by, [[maybe_unused]] const int bz, [[maybe_unused]] unsigned char* const smem) {{",
      k.name, params(k));
  ++ind_;
  line("[[maybe_unused]] const int tid = weft_tid();");
  if (s.op == OpKind::matmul && !is_device_kernel_call(s)) {
    const LibraryMatmul mm = library_matmul_shape(k);
    CtaGemmTile t = cta_gemm_tile(mm.m, mm.n);
    WEFT_CHECK(t.smem_bytes() == f.smem_bytes, "kernel {}: GEMM tiles of {} bytes, fit says {}",
               k.name, t.smem_bytes(), f.smem_bytes);
    line("// {} x {} x {} per batch element, {} x {} tiles, {}-deep slices", mm.m, mm.n, mm.kd,
         t.bm, t.bn, t.bk);
    open(fmt::format("for (int64_t bb = 0; bb < {}; ++bb) {{", mm.batch));
    line(
        "weft_cta_gemm<{}, {}, {}, {}>({}, {}, {}, {} + {}, {} + {}, {} + {}, "
        "reinterpret_cast<float*>(smem), reinterpret_cast<float*>(smem + {}));",
        t.bm, t.bn, t.bk, f.threads, mm.m, mm.n, mm.kd, mm.a.ptr, batch_base(mm, mm.a), mm.b.ptr,
        batch_base(mm, mm.b), mm.c.ptr, batch_base(mm, mm.c), 4 * t.a_floats());
    close();
  } else if (is_device_kernel_call(s)) {
    // Task bx of the call's dk_tasks strides over its share of the elements.
    const int64_t tasks = library_tasks(k);
    device_kernel_call(s, Workers{fmt::format("static_cast<int64_t>(bx) * {} + tid", f.threads),
                                  std::to_string(tasks * f.threads), "int64_t"});
  } else {
    library_loops(s, Workers{"tid", std::to_string(f.threads), "int64_t"});
  }
  close();
}

}  // namespace weft::cuda_emit
