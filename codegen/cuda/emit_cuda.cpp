// Emits CUDA from a kernel plan: per-block code over shared buffers (every thread of the block
// strides over elements; reductions use one warp per result; f16/bf16 matmuls use mma.sync), and
// grid-stride kernels or cuBLAS for library kernels.
#include "codegen/cuda/emit_cuda.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "codegen/cuda/prelude.h"
#include "core/error.h"

namespace weft {

namespace {

const char* ctype(DType d) {
  switch (d) {
    case DType::f32:
      return "float";
    case DType::f16:
      return "weft_f16";
    case DType::bf16:
      return "weft_bf16";
  }
  return "?";
}

// The dtype code weft_gemm takes (prelude).
int gemm_code(DType d) {
  return d == DType::f16 ? 1 : d == DType::bf16 ? 2 : 0;
}

std::string flit(double v) {
  std::string s = fmt::format("{:.9g}", v);
  if (s.find_first_of(".e") == std::string::npos && s.find("inf") == std::string::npos) s += ".0";
  return s + "f";
}

// Scalar semantics in f32 registers, one pattern per elementwise operator: {0}, {1} operands,
// {2} the operator's rational attribute (op table) as a literal.
struct ScalarForm {
  OpKind op;
  const char* pattern;
};
constexpr ScalarForm kScalarForms[] = {
    {OpKind::exp, "expf({0})"},       {OpKind::sqr, "({0} * {0})"},
    {OpKind::sqrt, "sqrtf({0})"},     {OpKind::silu, "weft_silu({0})"},
    {OpKind::gelu, "weft_gelu({0})"}, {OpKind::relu, "fmaxf({0}, 0.0f)"},
    {OpKind::scale, "({0} * {2})"},   {OpKind::shift, "({0} + {2})"},
    {OpKind::add, "({0} + {1})"},     {OpKind::sub, "({0} - {1})"},
    {OpKind::mul, "({0} * {1})"},     {OpKind::div, "({0} / {1})"},
};

// Reductions and accumulators: the identity and the combination of a partial {0} with {1}.
struct CombineForm {
  OpKind op;
  const char* identity;
  const char* combine;
};
constexpr CombineForm kCombineForms[] = {
    {OpKind::sum, "0.0f", "{0} + {1}"},
    {OpKind::mean, "0.0f", "{0} + {1}"},
    {OpKind::max, "-INFINITY", "fmaxf({0}, {1})"},
    {OpKind::accum_sum, "0.0f", "{0} + {1}"},
    {OpKind::accum_max, "-INFINITY", "fmaxf({0}, {1})"},
};

const CombineForm& combine_form(OpKind op) {
  for (const CombineForm& f : kCombineForms)
    if (f.op == op) return f;
  WEFT_CHECK(false, "{} is not a reduction", op_info(op).name);
  return kCombineForms[0];
}

std::string combine(OpKind op, const std::string& acc, const std::string& v) {
  return fmt::format(fmt::runtime(combine_form(op).combine), acc, v);
}

std::string scalar_expr(const Step& s, const std::vector<std::string>& a) {
  std::string constant;
  for (const AttrSpec& spec : op_info(s.op).attrs)
    if (spec.kind == AttrKind::rational)
      constant = flit(s.attrs.get_rational(spec.name).to_double());
  for (const ScalarForm& f : kScalarForms)
    if (f.op == s.op)
      return fmt::format(fmt::runtime(f.pattern), a.at(0), a.size() > 1 ? a[1] : "", constant);
  WEFT_CHECK(false, "{} is not elementwise", op_info(s.op).name);
  return "";
}

bool is_identifier(const std::string& e) {
  return std::all_of(e.begin(), e.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}
std::string paren(const std::string& e) {
  return is_identifier(e) ? e : "(" + e + ")";
}

// A tensor in generated code: a typed pointer expression with shape, element strides, swizzle.
struct Operand {
  std::string ptr;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<int64_t> strides;
  bool swizzle = false;
  bool wide = false;  // device tensor: 64-bit offsets
};

// Element offset of `o` at per-dim indices of a loop shape of the same rank (size-1 dims of `o`
// broadcast).
std::string offset(const Operand& o, const std::vector<std::string>& idx) {
  std::string e;
  for (size_t d = 0; d < o.shape.size(); ++d) {
    if (o.shape[d] == 1 || idx[d] == "0") continue;
    std::string v = o.wide ? fmt::format("static_cast<int64_t>({})", idx[d]) : paren(idx[d]);
    std::string term = o.strides[d] == 1 ? v : fmt::format("{} * {}", v, o.strides[d]);
    e += (e.empty() ? "" : " + ") + term;
  }
  if (e.empty()) e = "0";
  if (o.swizzle) e = fmt::format("weft_swz<{}>({})", dtype_bytes(o.dtype), e);
  return e;
}
std::string ref(const Operand& o, const std::vector<std::string>& idx) {
  return fmt::format("{}[{}]", o.ptr, offset(o, idx));
}
std::string load(const Operand& o, const std::vector<std::string>& idx) {
  return fmt::format("weft_ld(&{})", ref(o, idx));
}

// Who runs an element loop: every thread of a block, or every thread of a grid (library).
struct Workers {
  std::string first;  // this thread's first unit
  std::string step;   // number of threads
  const char* itype;  // index type
};

// Tensor-core tiling of one block matmul: output tiles of 16 x 8, a grid of wm x wn warps each
// owning pm x pn tiles.
struct MmaTiling {
  int64_t nb = 1, m = 0, n = 0, k = 0, wm = 1, wn = 1, pm = 1, pn = 1;
};

class Emitter {
 public:
  explicit Emitter(const ProgramPlan& p) : p_(p) {}

  std::string run() {
    line("// Generated by weft from the kernel plan of '{}' (target {}). Do not edit.", p_.name,
         p_.target);
    out_ += cuda_prelude();
    for (size_t i = 0; i < p_.tensors.size(); ++i) tensor_index_[p_.tensors[i].name] = i;
    for (const KernelPlan& k : p_.kernels) {
      line("");
      if (k.library)
        library_kernel(k);
      else
        block_kernel(k);
    }
    launcher();
    return std::move(out_);
  }

 private:
  template <class... A>
  void line(fmt::format_string<A...> f, A&&... a) {
    std::string text = fmt::format(f, std::forward<A>(a)...);
    out_ += (text.empty() ? "" : std::string(2 * ind_, ' ')) + text + "\n";
  }
  void open(const std::string& text) {
    line("{}", text);
    ++ind_;
  }
  void close(const char* text = "}") {
    --ind_;
    line("{}", text);
  }

  std::string tvar(const std::string& name) const {
    return fmt::format("T{}", tensor_index_.at(name));
  }
  Operand device(const std::string& name) const {
    const PlanBuffer& t = p_.tensors.at(tensor_index_.at(name));
    return Operand{tvar(name), t.dtype, t.shape, layout_strides(t.shape, t.contiguous_dim),
                   false,      true};
  }

  // A shared buffer of kernel k; pipelined buffers address the slot `slot` (default: the
  // current one).
  Operand buffer(const KernelPlan& k, const std::string& name, const std::string& slot = "") const {
    const PlanBuffer* b = k.find_buffer(name);
    WEFT_CHECK(b != nullptr && b->space == MemSpace::shared && b->offset >= 0,
               "{} is not a planned shared buffer", name);
    WEFT_CHECK(b->swizzle == 0 || b->bytes() % 128 == 0, "swizzled buffer {} of {} bytes", name,
               b->bytes());
    std::string ptr = buf_var_.at(name);
    if (is_pipelined(k, name))
      ptr = fmt::format("reinterpret_cast<{}*>(smem + {} + {} * {})", ctype(b->dtype), b->offset,
                        paren(slot.empty() ? slot_ : slot), stage_stride(*b));
    return Operand{
        ptr,  b->dtype, b->shape, layout_strides(b->shape, b->contiguous_dim), b->swizzle != 0,
        false};
  }

  // Opens `for (e = first; e < numel(shape); e += step)` and declares the row-major indices of
  // e over `shape`; returns their names ("0" for size-1 dims).
  std::vector<std::string> open_elements(const Shape& shape, const Workers& w,
                                         const std::string& var = "e") {
    int64_t total = numel(shape);
    open(fmt::format("for ({0} {1} = {2}; {1} < {3}; {1} += {4}) {{", w.itype, var, w.first, total,
                     w.step));
    std::vector<std::string> names;
    int64_t inner = total;
    for (size_t d = 0; d < shape.size(); ++d) {
      inner /= shape[d];
      if (shape[d] == 1) {
        names.push_back("0");
        continue;
      }
      std::string e = inner == 1 ? var : fmt::format("{} / {}", var, inner);
      if (inner * shape[d] != total) e = fmt::format("{} % {}", paren(e), shape[d]);
      std::string n = fmt::format("{}{}", var, d);
      line("[[maybe_unused]] const {} {} = {};", w.itype, n, e);
      names.push_back(n);
    }
    return names;
  }

  // ---------------------------------------------------------------- ops shared by both levels

  void elementwise(const Step& s, const std::vector<Operand>& ins, const Operand& out,
                   const Workers& w) {
    auto idx = open_elements(out.shape, w);
    std::vector<std::string> args;
    for (const Operand& in : ins) args.push_back(load(in, idx));
    line("weft_st(&{}, {});", ref(out, idx), scalar_expr(s, args));
    close();
  }

  // Warp per result when groups are long enough to keep lanes busy, else thread per result;
  // partials in f32 either way.
  void reduction(const Step& s, const Operand& in, const Operand& out, const Workers& w) {
    int64_t dim = s.attrs.get_int("dim");
    int64_t group = in.shape[dim] / out.shape[dim];
    const CombineForm& f = combine_form(s.op);
    std::string finish = s.op == OpKind::mean ? fmt::format(" / {}", flit(double(group))) : "";
    bool warp = group >= 16;
    open("{");
    Workers units = w;
    if (warp) {
      line("const {} rlane = {} & 31;", w.itype, paren(w.first));
      units.first = fmt::format("{} >> 5", paren(w.first));
      units.step = fmt::format("{} >> 5", paren(w.step));
    }
    auto idx = open_elements(out.shape, units, "o");
    std::vector<std::string> in_idx = idx;
    in_idx[dim] = idx[dim] == "0" ? "j" : fmt::format("{} * {} + j", idx[dim], group);
    line("float acc = {};", f.identity);
    if (warp) {
      open(fmt::format("for ({0} j = rlane; j < {1}; j += 32) {{", w.itype, group));
    } else {
      open(fmt::format("for ({0} j = 0; j < {1}; ++j) {{", w.itype, group));
    }
    line("acc = {};", combine(s.op, "acc", load(in, in_idx)));
    close();
    if (warp) {
      line("for (int m = 16; m > 0; m >>= 1) acc = {};",
           combine(s.op, "acc", "weft_shfl_xor(acc, m)"));
      line("if (rlane == 0) weft_st(&{}, acc{});", ref(out, idx), finish);
    } else {
      line("weft_st(&{}, acc{});", ref(out, idx), finish);
    }
    close();
    close();
  }

  // Data movement: every result element copied from its source element.
  void movement(const Step& s, const std::vector<Operand>& ins, const std::vector<Operand>& outs,
                const Workers& w) {
    auto copy = [&](const Operand& dst, const std::vector<std::string>& didx, const Operand& src,
                    const std::vector<std::string>& sidx) {
      if (dst.dtype == src.dtype)
        line("{} = {};", ref(dst, didx), ref(src, sidx));
      else
        line("weft_st(&{}, {});", ref(dst, didx), load(src, sidx));
    };
    switch (s.op) {
      case OpKind::reshape: {
        // Same row-major element order on both sides: the flat index maps through.
        auto idx = open_elements(outs[0].shape, w);
        std::vector<std::string> sidx;
        int64_t inner = numel(ins[0].shape);
        for (size_t d = 0; d < ins[0].shape.size(); ++d) {
          inner /= ins[0].shape[d];
          std::string e = inner == 1 ? "e" : fmt::format("e / {}", inner);
          sidx.push_back(ins[0].shape[d] == 1 ? "0"
                                              : fmt::format("{} % {}", paren(e), ins[0].shape[d]));
        }
        copy(outs[0], idx, ins[0], sidx);
        close();
        return;
      }
      case OpKind::concat: {
        int64_t d = s.attrs.get_int("dim"), off = 0;
        for (const Operand& in : ins) {
          auto idx = open_elements(in.shape, w);
          auto didx = idx;
          if (off) didx[d] = fmt::format("{} + {}", idx[d], off);
          copy(outs[0], didx, in, idx);
          close();
          off += in.shape[d];
        }
        return;
      }
      case OpKind::split: {
        int64_t d = s.attrs.get_int("dim"), off = 0;
        for (const Operand& out : outs) {
          auto idx = open_elements(out.shape, w);
          auto sidx = idx;
          if (off) sidx[d] = fmt::format("{} + {}", idx[d], off);
          copy(out, idx, ins[0], sidx);
          close();
          off += out.shape[d];
        }
        return;
      }
      case OpKind::repeat: {
        int64_t d = s.attrs.get_int("dim");
        auto idx = open_elements(outs[0].shape, w);
        auto sidx = idx;
        if (idx[d] != "0") sidx[d] = fmt::format("{} % {}", idx[d], ins[0].shape[d]);
        copy(outs[0], idx, ins[0], sidx);
        close();
        return;
      }
      default:
        WEFT_CHECK(false, "{} is not a movement operator", op_info(s.op).name);
    }
  }

  // Units of parallel work a library kernel's loops have (threads to launch).
  static int64_t library_units(const Step& s, const std::vector<Operand>& ins,
                               const std::vector<Operand>& outs) {
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

  // ---------------------------------------------------------------- library kernels

  void library_kernel(const KernelPlan& k) {
    const Step& s = k.loop_steps.at(0);
    if (s.op == OpKind::matmul) return;  // cuBLAS, called from the launcher
    std::vector<Operand> ins, outs;
    for (const std::string& n : s.inputs) ins.push_back(device(n));
    for (const std::string& n : s.outputs) outs.push_back(device(n));
    line("// kernel {}: library {}", k.name, op_info(s.op).name);
    line("WEFT_KERNEL({}) {}({}) {{", kLibraryThreads, k.name, params(k));
    ++ind_;
    Workers w{"weft_gtid()", "weft_gthreads()", "int64_t"};
    OpClass c = op_info(s.op).op_class;
    if (c == OpClass::unary || c == OpClass::binary)
      elementwise(s, ins, outs[0], w);
    else if (c == OpClass::reduction)
      reduction(s, ins[0], outs[0], w);
    else if (c == OpClass::movement)
      movement(s, ins, outs, w);
    else
      WEFT_CHECK(false, "no CUDA library kernel for {}", op_info(s.op).name);
    close();
  }

  // Kernel parameters: the device tensors a kernel reads (const) and writes, in plan order.
  std::string params(const KernelPlan& k) const {
    std::map<size_t, bool> used;  // tensor index -> written
    for (const auto* steps : {&k.loop_steps, &k.post_steps})
      for (const Step& s : *steps) {
        if (s.kind == StepKind::load || s.kind == StepKind::call)
          for (const std::string& n : s.inputs) used.emplace(tensor_index_.at(n), false);
        if (s.kind == StepKind::store || s.kind == StepKind::call)
          for (const std::string& n : s.outputs) used[tensor_index_.at(n)] = true;
      }
    std::string out;
    for (auto [i, written] : used)
      out += fmt::format("{}{}{}* __restrict__ T{}", out.empty() ? "" : ", ",
                         written ? "" : "const ", ctype(p_.tensors[i].dtype), i);
    return out;
  }
  std::string args(const KernelPlan& k) const {
    std::set<size_t> used;
    for (const auto* steps : {&k.loop_steps, &k.post_steps})
      for (const Step& s : *steps) {
        if (s.kind == StepKind::load || s.kind == StepKind::call)
          for (const std::string& n : s.inputs) used.insert(tensor_index_.at(n));
        if (s.kind == StepKind::store || s.kind == StepKind::call)
          for (const std::string& n : s.outputs) used.insert(tensor_index_.at(n));
      }
    std::string out;
    for (size_t i : used) out += fmt::format("{}T{}", out.empty() ? "" : ", ", i);
    return out;
  }

  // ---------------------------------------------------------------- graph-defined kernels

  std::optional<MmaTiling> mma_tiling(const KernelPlan& k, const Step& s) const {
    const PlanBuffer *a = k.find_buffer(s.inputs[0]), *b = k.find_buffer(s.inputs[1]),
                     *c = k.find_buffer(s.outputs[0]);
    if (!a || !b || !c || a->space != MemSpace::shared || b->space != MemSpace::shared)
      return std::nullopt;
    if (a->dtype != b->dtype || a->dtype == DType::f32 || k.threads % 32 != 0) return std::nullopt;
    int r = static_cast<int>(c->shape.size());
    if (a->contiguous_dim != r - 1 || b->contiguous_dim != r - 1) return std::nullopt;
    MmaTiling t;
    t.m = c->shape[r - 2];
    t.n = c->shape[r - 1];
    t.k = a->shape[r - 1];
    if (t.k % 16 != 0 || t.n % 8 != 0) return std::nullopt;
    for (int d = 0; d + 2 < r; ++d) t.nb *= c->shape[d];
    int64_t mt = (t.m + 15) / 16, nt = t.n / 8, warps = k.threads / 32;
    int64_t best_used = 0, best_load = 0;
    for (int64_t wm = 1; wm <= std::min(mt, warps); ++wm)
      for (int64_t wn = 1; wm * wn <= warps && wn <= nt; ++wn) {
        if (mt % wm || nt % wn) continue;
        int64_t used = wm * wn, load = mt / wm + nt / wn;
        if (used > best_used || (used == best_used && load < best_load)) {
          best_used = used;
          best_load = load;
          t.wm = wm;
          t.wn = wn;
        }
      }
    t.pm = mt / t.wm;
    t.pn = nt / t.wn;
    // Keep the fragments in registers: at most 64 accumulator floats per thread.
    if (t.nb * t.pm * t.pn * 4 > 64) return std::nullopt;
    return t;
  }

  // Index expressions of batch element `bb` (row-major over C's batch dims), then row, col.
  static std::vector<std::string> mm_index(const Shape& c_shape, const std::string& row,
                                           const std::string& col) {
    std::vector<std::string> idx;
    int r = static_cast<int>(c_shape.size());
    int64_t inner = 1;
    for (int d = 0; d + 2 < r; ++d) inner *= c_shape[d];
    for (int d = 0; d + 2 < r; ++d) {
      inner /= c_shape[d];
      idx.push_back(c_shape[d] == 1 ? "0" : fmt::format("(bb / {}) % {}", inner, c_shape[d]));
    }
    idx.push_back(row);
    idx.push_back(col);
    return idx;
  }

  // C (or a register accumulator `racc`) = A x B on tensor cores: ldmatrix fragments,
  // mma.sync.m16n8k16 with f32 accumulation; rows beyond m read row m-1 and are dropped.
  void mma_matmul(const KernelPlan& k, const Step& s, const MmaTiling& t, const std::string& racc) {
    Operand a = buffer(k, s.inputs[0]), b = buffer(k, s.inputs[1]);
    const char* mma = a.dtype == DType::f16 ? "weft_mma_f16" : "weft_mma_bf16";
    Shape cs = k.find_buffer(s.outputs[0])->shape;
    line("// matmul {} on tensor cores: {} x {} warps of {} x {} tiles (16x8x16)", s.outputs[0],
         t.wm, t.wn, t.pm, t.pn);
    open(fmt::format("if (warp < {}) {{", t.wm * t.wn));
    line("const int wm = warp / {}, wn = warp % {};", t.wn, t.wn);
    open(fmt::format("for (int bb = 0; bb < {}; ++bb) {{", t.nb));
    std::string acc = racc.empty() ? "acc" : racc + "[bb]";
    if (racc.empty()) line("float acc[{}][{}][4] = {{}};", t.pm, t.pn);
    open(fmt::format("for (int kk = 0; kk < {}; kk += 16) {{", t.k));
    line("uint32_t af[{}][4], bf[{}][2];", t.pm, t.pn);
    line("WEFT_UNROLL");
    open(fmt::format("for (int i = 0; i < {}; ++i) {{", t.pm));
    line("int row = (wm * {} + i) * 16 + (lane & 15);", t.pm);
    if (t.m % 16 != 0) line("row = row < {} ? row : {};", t.m, t.m - 1);
    line("weft_ldmatrix_x4(af[i], &{});", ref(a, mm_index(cs, "row", "kk + (lane >> 4) * 8")));
    close();
    line("WEFT_UNROLL");
    open(fmt::format("for (int j = 0; j < {}; ++j) {{", t.pn));
    line("weft_ldmatrix_x2_trans(bf[j], &{});",
         ref(b, mm_index(cs, "kk + (lane & 15)", fmt::format("(wn * {} + j) * 8", t.pn))));
    close();
    line("WEFT_UNROLL");
    line("for (int i = 0; i < {}; ++i)", t.pm);
    line("  WEFT_UNROLL");
    line("  for (int j = 0; j < {}; ++j) {}({}[i][j], af[i], bf[j]);", t.pn, mma, acc);
    close();
    if (racc.empty()) fragments_to(t, buffer(k, s.outputs[0]), cs, "acc");
    close();
    close();
  }

  // Writes accumulator fragments `frag`[i][j][r] (for batch bb) to a shared buffer.
  void fragments_to(const MmaTiling& t, const Operand& c, const Shape& cs,
                    const std::string& frag) {
    line("for (int i = 0; i < {}; ++i)", t.pm);
    line("  for (int j = 0; j < {}; ++j)", t.pn);
    open("    for (int r = 0; r < 4; ++r) {");
    line("const int row = (wm * {} + i) * 16 + (lane >> 2) + 8 * (r >> 1);", t.pm);
    line("const int col = (wn * {} + j) * 8 + 2 * (lane & 3) + (r & 1);", t.pn);
    std::string st =
        fmt::format("weft_st(&{}, {}[i][j][r]);", ref(c, mm_index(cs, "row", "col")), frag);
    if (t.m % 16 != 0)
      line("if (row < {}) {}", t.m, st);
    else
      line("{}", st);
    close();
  }

  // Scalar matmul: one thread per result element, f32 dot product; `accumulate_into` (an f32
  // accumulator) receives the result added instead of C.
  void scalar_matmul(const KernelPlan& k, const Step& s, const std::string& accumulate_into) {
    Operand a = buffer(k, s.inputs[0]), b = buffer(k, s.inputs[1]);
    Operand c = buffer(k, accumulate_into.empty() ? s.outputs[0] : accumulate_into);
    int r = static_cast<int>(c.shape.size());
    int64_t kd = a.shape[r - 1];
    auto idx = open_elements(c.shape, block_workers_);
    auto ai = idx, bi = idx;
    ai[r - 1] = "q";
    bi[r - 2] = "q";
    line("float acc = 0.0f;");
    line("for (int q = 0; q < {}; ++q) acc += {} * {};", kd, load(a, ai), load(b, bi));
    if (accumulate_into.empty())
      line("weft_st(&{}, acc);", ref(c, idx));
    else
      line("weft_st(&{0}, weft_ld(&{0}) + acc);", ref(c, idx));
    close();
  }

  // Device tile -> shared buffer: 16-byte copies (cp.async on sm_80+) when rows allow, else
  // element copies. `it` is the iteration whose chunk is loaded.
  void emit_load(const KernelPlan& k, const Step& s, const std::string& it,
                 const std::string& slot) {
    Operand src = device(s.inputs[0]), dst = buffer(k, s.outputs[0], slot);
    const PlanBuffer& t = p_.tensors.at(tensor_index_.at(s.inputs[0]));
    size_t r = dst.shape.size();
    auto imap = s.attrs.get_list("imap");
    int64_t fmap = s.attrs.get_int("fmap");
    std::vector<std::string> off(r);
    for (int g = 0; g < 3; ++g)
      if (imap[g] >= 0)
        off[imap[g]] = fmt::format("{} * {}", kBid[g], t.shape[imap[g]] / k.grid[g]);
    if (fmap >= 0)
      off[fmap] = (off[fmap].empty() ? "" : off[fmap] + " + ") +
                  fmt::format("{} * {}", paren(it), dst.shape[fmap]);
    line("// load {} <- {}", s.outputs[0], s.inputs[0]);
    int esize = dtype_bytes(dst.dtype);
    bool vector = t.contiguous_dim == static_cast<int>(r) - 1 && dst.strides[r - 1] == 1 &&
                  (dst.shape[r - 1] * esize) % 16 == 0 && (t.shape[r - 1] * esize) % 16 == 0;
    auto with_off = [&](std::vector<std::string> idx) {
      for (size_t d = 0; d < r; ++d)
        if (!off[d].empty())
          idx[d] = idx[d] == "0" ? off[d] : fmt::format("{} + {}", idx[d], off[d]);
      return idx;
    };
    if (vector) {
      int64_t per = 16 / esize;
      Shape chunks = dst.shape;
      chunks[r - 1] /= per;
      auto idx = open_elements(chunks, block_workers_, "c");
      idx[r - 1] = idx[r - 1] == "0" ? "0" : fmt::format("{} * {}", idx[r - 1], per);
      line("weft_cp_async16(&{}, &{});", ref(dst, idx), ref(src, with_off(idx)));
      close();
    } else {
      auto idx = open_elements(dst.shape, block_workers_);
      line("{} = {};", ref(dst, idx), ref(src, with_off(idx)));
      close();
    }
  }

  // Shared buffer -> device tile of the block (omap), converting accumulators to the tensor type.
  void emit_store(const KernelPlan& k, const Step& s) {
    Operand src = buffer(k, s.inputs[0]), dst = device(s.outputs[0]);
    const PlanBuffer& t = p_.tensors.at(tensor_index_.at(s.outputs[0]));
    size_t r = src.shape.size();
    auto omap = s.attrs.get_list("omap");
    std::vector<std::string> off(r);
    for (int g = 0; g < 3; ++g)
      if (omap[g] >= 0) off[omap[g]] = fmt::format("{} * {}", kBid[g], src.shape[omap[g]]);
    auto with_off = [&](std::vector<std::string> idx) {
      for (size_t d = 0; d < r; ++d)
        if (!off[d].empty())
          idx[d] = idx[d] == "0" ? off[d] : fmt::format("{} + {}", idx[d], off[d]);
      return idx;
    };
    line("// store {} -> {}", s.inputs[0], s.outputs[0]);
    int esize = dtype_bytes(src.dtype);
    bool vector = src.dtype == dst.dtype && t.contiguous_dim == static_cast<int>(r) - 1 &&
                  src.strides[r - 1] == 1 && (src.shape[r - 1] * esize) % 16 == 0 &&
                  (t.shape[r - 1] * esize) % 16 == 0;
    if (vector) {
      int64_t per = 16 / esize;
      Shape chunks = src.shape;
      chunks[r - 1] /= per;
      auto idx = open_elements(chunks, block_workers_, "c");
      idx[r - 1] = idx[r - 1] == "0" ? "0" : fmt::format("{} * {}", idx[r - 1], per);
      line("weft_copy16(&{}, &{});", ref(dst, with_off(idx)), ref(src, idx));
      close();
    } else {
      auto idx = open_elements(src.shape, block_workers_);
      if (src.dtype == dst.dtype)
        line("{} = {};", ref(dst, with_off(idx)), ref(src, idx));
      else
        line("weft_st(&{}, {});", ref(dst, with_off(idx)), load(src, idx));
      close();
    }
  }

  void thread_step(const KernelPlan& k, const Step& t) {
    Shape shape = k.find_buffer(t.outputs[0])->shape;
    line("// thread {}", t.outputs[0]);
    auto idx = open_elements(shape, block_workers_);
    std::map<std::string, std::string> regs;
    int n = 0;
    for (const Step& s : t.body) {
      std::vector<std::string> a;
      for (const std::string& in : s.inputs)
        a.push_back(regs.count(in) ? regs.at(in) : load(buffer(k, in), idx));
      std::string r = fmt::format("r{}", n++);
      line("const float {} = {};", r, scalar_expr(s, a));
      regs[s.outputs[0]] = r;
    }
    for (const std::string& o : t.outputs) {
      Operand ob = buffer(k, o);
      WEFT_CHECK(ob.shape == shape, "thread outputs of different shapes");
      line("weft_st(&{}, {});", ref(ob, idx), regs.at(o));
    }
    close();
  }

  void block_step(const KernelPlan& k, const Step& s) {
    switch (s.kind) {
      case StepKind::barrier:
        if (loads_in_flight_) {
          line("weft_cp_async_commit();");
          line("weft_cp_async_wait<0>();");
          loads_in_flight_ = false;
        }
        line("weft_sync();");
        return;
      case StepKind::load:
        if (in_loop_ && k.stages > 1) return;  // issued ahead by the pipeline
        emit_load(k, s, in_loop_ ? "it" : "0", "");
        loads_in_flight_ = true;
        return;
      case StepKind::store:
        emit_store(k, s);
        return;
      case StepKind::accum: {
        if (skipped_accums_.count(s.outputs[0])) return;
        Operand x = buffer(k, s.inputs[0]), acc = buffer(k, s.outputs[0]);
        line("// {} {} <- {}", op_info(s.op).name, s.outputs[0], s.inputs[0]);
        auto idx = open_elements(x.shape, block_workers_);
        if (s.op == OpKind::accum_concat) {
          int64_t d = s.attrs.get_int("dim");
          auto aidx = idx;
          aidx[d] = idx[d] == "0" ? fmt::format("it * {}", x.shape[d])
                                  : fmt::format("{} + it * {}", idx[d], x.shape[d]);
          line("weft_st(&{}, {});", ref(acc, aidx), load(x, idx));
        } else {
          line("weft_st(&{}, {});", ref(acc, idx), combine(s.op, load(acc, idx), load(x, idx)));
        }
        close();
        return;
      }
      case StepKind::compute: {
        line("// {} {}", op_info(s.op).name, s.outputs[0]);
        if (s.op == OpKind::matmul) {
          auto f = fused_.find(s.outputs[0]);
          std::string into = f == fused_.end() ? "" : f->second;
          auto t = mma_tiling(k, s);
          if (t && !into.empty())
            mma_matmul(k, s, *t, reg_acc_.at(into));
          else if (t)
            mma_matmul(k, s, *t, "");
          else
            scalar_matmul(k, s, into);
          return;
        }
        std::vector<Operand> ins, outs;
        for (const std::string& n : s.inputs) ins.push_back(buffer(k, n));
        for (const std::string& n : s.outputs) outs.push_back(buffer(k, n));
        OpClass c = op_info(s.op).op_class;
        if (c == OpClass::unary || c == OpClass::binary)
          elementwise(s, ins, outs[0], block_workers_);
        else if (c == OpClass::reduction)
          reduction(s, ins[0], outs[0], block_workers_);
        else if (c == OpClass::movement)
          movement(s, ins, outs, block_workers_);
        else
          WEFT_CHECK(false, "no CUDA block code for {}", op_info(s.op).name);
        return;
      }
      case StepKind::thread:
        thread_step(k, s);
        return;
      case StepKind::call:
        WEFT_CHECK(false, "call step inside a block");
    }
  }

  void block_kernel(const KernelPlan& k) {
    WEFT_CHECK(k.threads % 32 == 0, "kernel {}: {} threads is not a whole number of warps", k.name,
               k.threads);
    block_workers_ = Workers{"tid", std::to_string(k.threads), "int"};
    // A matmul whose only reader is an accum_sum adds straight into the accumulator; on tensor
    // cores the sum stays in registers across iterations and is written once after the loop.
    std::map<std::string, int> readers;
    for (const auto* steps : {&k.loop_steps, &k.post_steps})
      for (const Step& s : *steps)
        for (const std::string& in : s.inputs) ++readers[in];
    fused_.clear();
    skipped_accums_.clear();
    reg_acc_.clear();
    std::vector<std::pair<std::string, MmaTiling>> reg_accs;  // accumulator, tiling
    for (const Step& acc : k.loop_steps)
      if (acc.kind == StepKind::accum && acc.op == OpKind::accum_sum && readers[acc.inputs[0]] == 1)
        for (const Step& mm : k.loop_steps)
          if (mm.kind == StepKind::compute && mm.op == OpKind::matmul &&
              mm.outputs[0] == acc.inputs[0]) {
            fused_[mm.outputs[0]] = acc.outputs[0];
            skipped_accums_.insert(acc.outputs[0]);
            if (auto t = mma_tiling(k, mm)) {
              reg_acc_[acc.outputs[0]] = fmt::format("racc{}", reg_accs.size());
              reg_accs.emplace_back(acc.outputs[0], *t);
            }
          }

    line(
        "// kernel {}: grid [{}, {}, {}], {} threads, loop {}, {} stage{}, {} bytes of shared "
        "memory",
        k.name, k.grid[0], k.grid[1], k.grid[2], k.threads, k.loop, k.stages,
        k.stages == 1 ? "" : "s", k.smem_bytes);
    line("WEFT_KERNEL({}) {}({}) {{", k.threads, k.name, params(k));
    ++ind_;
    line("[[maybe_unused]] unsigned char* const smem = weft_smem_base();");
    line("const int tid = weft_tid();");
    line("[[maybe_unused]] const int lane = tid & 31, warp = tid >> 5;");
    line("[[maybe_unused]] const int bx = weft_bid_x(), by = weft_bid_y(), bz = weft_bid_z();");
    buf_var_.clear();
    int n = 0;
    for (const PlanBuffer& b : k.buffers) {
      if (b.space != MemSpace::shared) continue;
      std::string v = fmt::format("B{}", n++);
      buf_var_[b.name] = v;
      if (is_pipelined(k, b.name)) continue;
      line("[[maybe_unused]] {0}* const {1} = reinterpret_cast<{0}*>(smem + {2});  // {3} {4}",
           ctype(b.dtype), v, b.offset, b.name, shape_str(b.shape));
    }
    for (size_t i = 0; i < reg_accs.size(); ++i) {
      const MmaTiling& t = reg_accs[i].second;
      line("float racc{}[{}][{}][{}][4] = {{}};  // {} in registers", i, t.nb, t.pm, t.pn,
           reg_accs[i].first);
    }
    bool inits = false;
    for (const Step& s : k.loop_steps) {
      if (s.kind != StepKind::accum || s.op == OpKind::accum_concat || reg_acc_.count(s.outputs[0]))
        continue;
      Operand acc = buffer(k, s.outputs[0]);
      line("for (int e = tid; e < {}; e += {}) weft_st(&{}[e], {});", numel(acc.shape), k.threads,
           acc.ptr, combine_form(s.op).identity);
      inits = true;
    }
    if (inits) line("weft_sync();");

    in_loop_ = true;
    loads_in_flight_ = false;
    if (k.stages > 1) {
      line("// pipeline: the loads of iteration it + {} are in flight while iteration it computes",
           k.stages - 1);
      open(fmt::format("for (int f = 0; f < {}; ++f) {{", k.stages - 1));
      issue_loads(k, "f");
      close();
    }
    open(fmt::format("for (int it = 0; it < {}; ++it) {{", k.loop));
    if (k.stages > 1) {
      slot_ = "slot";
      line("[[maybe_unused]] const int slot = it % {};", k.stages);
      open("{");
      line("const int f = it + {};", k.stages - 1);
      issue_loads(k, "f");
      close();
      line("weft_cp_async_wait<{}>();", k.stages - 1);
    }
    for (const Step& s : k.loop_steps) block_step(k, s);
    close();
    in_loop_ = false;
    slot_ = std::to_string((k.loop - 1) % k.stages);
    if (!reg_accs.empty()) {
      for (size_t i = 0; i < reg_accs.size(); ++i) {
        const MmaTiling& t = reg_accs[i].second;
        line("// {} from registers", reg_accs[i].first);
        open(fmt::format("if (warp < {}) {{", t.wm * t.wn));
        line("const int wm = warp / {}, wn = warp % {};", t.wn, t.wn);
        open(fmt::format("for (int bb = 0; bb < {}; ++bb) {{", t.nb));
        Operand acc = buffer(k, reg_accs[i].first);
        fragments_to(t, acc, acc.shape, fmt::format("racc{}[bb]", i));
        close();
        close();
      }
      line("weft_sync();");
    }
    for (const Step& s : k.post_steps) block_step(k, s);
    if (loads_in_flight_) line("weft_cp_async_wait<0>();");
    close();
  }

  // One cp.async group with the loop's loads for iteration f (when it exists) into slot f % S.
  void issue_loads(const KernelPlan& k, const std::string& f) {
    open(fmt::format("if ({} < {}) {{", f, k.loop));
    for (const Step& s : k.loop_steps)
      if (s.kind == StepKind::load) emit_load(k, s, f, fmt::format("{} % {}", f, k.stages));
    close();
    line("weft_cp_async_commit();");
  }

  // ---------------------------------------------------------------- host launcher

  void library_matmul(const KernelPlan& k) {
    const Step& s = k.loop_steps.at(0);
    Operand a = device(s.inputs[0]), b = device(s.inputs[1]), c = device(s.outputs[0]);
    size_t r = c.shape.size();
    int64_t m = c.shape[r - 2], n = c.shape[r - 1], kd = a.shape[r - 1];
    int64_t batch = 1;
    for (size_t d = 0; d + 2 < r; ++d) batch *= c.shape[d];
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
    auto base = [&](const Operand& o) {
      std::string e = "0";
      int64_t inner = batch;
      for (size_t d = 0; d + 2 < r; ++d) {
        inner /= c.shape[d];
        if (o.shape[d] != 1)
          e += fmt::format(" + (bb / {}) % {} * {}", inner, c.shape[d], o.strides[d]);
      }
      return e;
    };
    line(
        "if (int e_ = weft_gemm({}, {}, {}, {}, {} + {}, 0, {} + {}, 0, {} + {}, 0, 1, stream)) "
        "return e_;",
        gemm_code(c.dtype), m, n, kd, a.ptr, base(a), b.ptr, base(b), c.ptr, base(c));
    close();
  }

  void launcher() {
    line("");
    line("extern \"C\" const char* weft_cuda_plan_name(void) {{ return \"{}\"; }}", p_.name);
    line("");
    line(
        "extern \"C\" int weft_cuda_launch(void* const* inputs, void* const* outputs, "
        "void* workspace, void* stream) {{");
    ++ind_;
    line("[[maybe_unused]] unsigned char* const ws = static_cast<unsigned char*>(workspace);");
    line("(void)inputs;");
    line("(void)outputs;");
    line("(void)stream;");
    for (size_t i = 0; i < p_.tensors.size(); ++i) {
      const PlanBuffer& t = p_.tensors[i];
      const char* ty = ctype(t.dtype);
      if (t.role == TensorRole::input) {
        auto pos = std::find(p_.inputs.begin(), p_.inputs.end(), t.name) - p_.inputs.begin();
        line("[[maybe_unused]] {0}* const T{1} = static_cast<{0}*>(inputs[{2}]);  // {3}", ty, i,
             pos, t.name);
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
    for (const KernelPlan& k : p_.kernels) {
      if (k.library) {
        const Step& s = k.loop_steps.at(0);
        if (s.op == OpKind::matmul) {
          library_matmul(k);
          continue;
        }
        std::vector<Operand> ins, outs;
        for (const std::string& n : s.inputs) ins.push_back(device(n));
        for (const std::string& n : s.outputs) outs.push_back(device(n));
        int64_t units = library_units(s, ins, outs);
        int64_t grid = std::clamp<int64_t>((units + kLibraryThreads - 1) / kLibraryThreads, 1,
                                           kMaxLibraryBlocks);
        line("WEFT_LAUNCH({}, {}, 1, 1, {}, 0, stream, {});", k.name, grid, kLibraryThreads,
             args(k));
      } else {
        if (k.smem_bytes > kDefaultSmemLimit) line("WEFT_SET_SMEM({}, {});", k.name, k.smem_bytes);
        line("WEFT_LAUNCH({}, {}, {}, {}, {}, {}, stream, {});", k.name, k.grid[0], k.grid[1],
             k.grid[2], k.threads, k.smem_bytes, args(k));
      }
    }
    line("return 0;");
    close();
  }

  static constexpr int64_t kLibraryThreads = 256;
  static constexpr int64_t kMaxLibraryBlocks = 4096;
  static constexpr int64_t kDefaultSmemLimit = 48 * 1024;  // dynamic shared memory without opt-in
  static constexpr const char* kBid[3] = {"bx", "by", "bz"};

  const ProgramPlan& p_;
  std::string out_;
  int ind_ = 0;
  std::map<std::string, size_t> tensor_index_;
  std::map<std::string, std::string> buf_var_;
  std::map<std::string, std::string> fused_;    // matmul result -> accumulator it adds into
  std::set<std::string> skipped_accums_;        // accumulators fed by a fused matmul
  std::map<std::string, std::string> reg_acc_;  // accumulator -> register array
  Workers block_workers_;
  std::string slot_ = "0";
  bool in_loop_ = false;
  bool loads_in_flight_ = false;
};

}  // namespace

std::string emit_cuda_source(const ProgramPlan& plan) {
  return Emitter(plan).run();
}

}  // namespace weft
