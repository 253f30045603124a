// CUDA emission of graph-defined kernels: block functions over shared buffers, with pipelined
// tile loads, tensor-core or scalar matmuls, accumulators in shared memory or in registers.
#include "codegen/cuda/cuda_emitter.h"

#include <fmt/format.h>

#include <limits>
#include <map>
#include <optional>

#include "core/error.h"
#include "lower/fuse_accumulators.h"
#include "lower/mma_tiling.h"

namespace weft::cuda_emit {

std::vector<std::string> Emitter::mm_index(const Shape& c_shape, const std::string& row,
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

void Emitter::mma_matmul(const KernelPlan& k, const Step& s, const MmaTiling& t,
                         const std::string& racc) {
  Operand a = buffer(k, s.inputs[0]), b = buffer(k, s.inputs[1]);
  const char* mma = a.dtype == DType::f16 ? "weft_mma_f16" : "weft_mma_bf16";
  Shape cs = k.find_buffer(s.outputs[0])->shape;
  line("// matmul {} on tensor cores: {} x {} warps of {} x {} tiles (16x8x16)", s.outputs[0], t.wm,
       t.wn, t.pm, t.pn);
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

void Emitter::fragments_to(const MmaTiling& t, const Operand& c, const Shape& cs,
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

void Emitter::scalar_matmul(const KernelPlan& k, const Step& s,
                            const std::string& accumulate_into) {
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

void Emitter::emit_load(const KernelPlan& k, const Step& s, const std::string& it,
                        const std::string& slot) {
  Operand src = device(s.inputs[0]), dst = buffer(k, s.outputs[0], slot);
  const PlanBuffer& t = p_.tensors.at(tensor_index_.at(s.inputs[0]));
  size_t r = dst.shape.size();
  auto imap = s.attrs.get_list("imap");
  int64_t fmap = s.attrs.get_int("fmap");
  std::vector<std::string> off(r);
  for (int g = 0; g < 3; ++g)
    if (imap[g] >= 0) off[imap[g]] = fmt::format("{} * {}", kBid[g], t.shape[imap[g]] / k.grid[g]);
  if (fmap >= 0)
    off[fmap] = (off[fmap].empty() ? "" : off[fmap] + " + ") +
                fmt::format("{} * {}", paren(it), dst.shape[fmap]);
  line("// load {} <- {}", s.outputs[0], s.inputs[0]);
  int esize = dtype_bytes(dst.dtype);
  bool vector = t.contiguous_dim == static_cast<int>(r) - 1 && dst.strides[r - 1] == 1 &&
                (dst.shape[r - 1] * esize) % 16 == 0 && (t.shape[r - 1] * esize) % 16 == 0;
  auto with_off = [&](std::vector<std::string> idx) {
    for (size_t d = 0; d < r; ++d)
      if (!off[d].empty()) idx[d] = idx[d] == "0" ? off[d] : fmt::format("{} + {}", idx[d], off[d]);
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

void Emitter::emit_store(const KernelPlan& k, const Step& s) {
  Operand src = buffer(k, s.inputs[0]), dst = device(s.outputs[0]);
  const PlanBuffer& t = p_.tensors.at(tensor_index_.at(s.outputs[0]));
  size_t r = src.shape.size();
  auto omap = s.attrs.get_list("omap");
  std::vector<std::string> off(r);
  for (int g = 0; g < 3; ++g)
    if (omap[g] >= 0) off[omap[g]] = fmt::format("{} * {}", kBid[g], src.shape[omap[g]]);
  auto with_off = [&](std::vector<std::string> idx) {
    for (size_t d = 0; d < r; ++d)
      if (!off[d].empty()) idx[d] = idx[d] == "0" ? off[d] : fmt::format("{} + {}", idx[d], off[d]);
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

void Emitter::thread_step(const KernelPlan& k, const Step& t) {
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

void Emitter::block_step(const KernelPlan& k, const Step& s) {
  switch (s.kind) {
    case StepKind::barrier:
      if (loads_in_flight_) {
        line("weft_cp_async_commit();");
        line("weft_cp_async_wait<0>();");
        loads_in_flight_ = false;
      }
      sync();
      return;
    case StepKind::load:
      // Issued before the loop: once (hoisted) or ahead by the pipeline.
      if (in_loop_ && (s.hoisted || k.stages > 1)) return;
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
        if (!into.empty() && reg_acc_.count(into))
          mma_matmul(k, s, *mma_tiling(k, s), reg_acc_.at(into));
        else if (auto t = mma_tiling(k, s); t && into.empty())
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

void Emitter::sync() {
  if (fit_)
    line("weft_bar_sync(1, {});", block_workers_.step);
  else
    line("weft_sync();");
}

void Emitter::block_kernel(const KernelPlan& k) {
  WEFT_CHECK(k.threads % 32 == 0, "kernel {}: {} threads is not a whole number of warps", k.name,
             k.threads);
  block_workers_ = Workers{"tid", std::to_string(k.threads), "int"};
  // The plan decides (lower/fuse_accumulators.h): a matmul whose result is a reg buffer adds
  // straight into the accum_sum reading it; an accumulator marked in_registers keeps its sum in
  // the matmul's mma fragments across iterations and is written to shared memory after the loop.
  fused_.clear();
  skipped_accums_.clear();
  reg_acc_.clear();
  std::vector<std::pair<std::string, MmaTiling>> reg_accs;  // accumulator, tiling
  for (const AccumulatorFusion& f : planned_accumulator_fusions(k)) {
    fused_[f.product] = f.accumulator;
    skipped_accums_.insert(f.accumulator);
    if (!f.registers) continue;
    for (const Step& s : k.loop_steps)
      if (s.kind == StepKind::compute && s.outputs.at(0) == f.product) {
        auto t = mma_tiling(k, s);
        WEFT_CHECK(t.has_value(), "kernel {}: {} in registers but {} has no tensor-core tiling",
                   k.name, f.accumulator, f.product);
        reg_acc_[f.accumulator] = fmt::format("racc{}", reg_accs.size());
        reg_accs.emplace_back(f.accumulator, *t);
      }
  }
  // The fragments are written after the loop into memory the loop's buffers may have used:
  // the loop's final barrier orders those reads first.
  WEFT_CHECK(
      reg_accs.empty() || (!k.loop_steps.empty() && k.loop_steps.back().kind == StepKind::barrier),
      "kernel {}: register accumulators need a barrier ending the loop", k.name);

  line(
      "// kernel {}: grid [{}, {}, {}], {} threads, loop {}, {} stage{}, {} bytes of shared "
      "memory",
      k.name, k.grid[0], k.grid[1], k.grid[2], k.threads, k.loop, k.stages,
      k.stages == 1 ? "" : "s", k.smem_bytes);
  // What a caller of the block function needs (docs/cuda-backend.md, "Block functions").
  WEFT_CHECK(k.smem_bytes <= std::numeric_limits<int>::max(),
             "kernel {}: {} bytes of shared memory", k.name, k.smem_bytes);
  // Task bodies use some of them only.
  const char* maybe_unused = fit_ ? "[[maybe_unused]] " : "";
  line("{}constexpr int {}_threads = {};", maybe_unused, k.name, k.threads);
  line("{}constexpr int {}_smem_bytes = {};", maybe_unused, k.name, k.smem_bytes);
  line("{0}constexpr int {1}_grid_x = {2}, {1}_grid_y = {3}, {1}_grid_z = {4};", maybe_unused,
       k.name, k.grid[0], k.grid[1], k.grid[2]);
  line(
      "WEFT_BLOCK_FN void {}_block({}, [[maybe_unused]] const int bx, [[maybe_unused]] const int "
      "by, [[maybe_unused]] const int bz, [[maybe_unused]] unsigned char* const smem) {{",
      k.name, params(k));
  ++ind_;
  line("const int tid = weft_tid();");
  line("[[maybe_unused]] const int lane = tid & 31, warp = tid >> 5;");
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
  // Loop-invariant tiles (lower/hoist_loads.h), in one cp.async group committed before the
  // pipeline's: groups complete in order, so the wait of iteration 0 (stages > 1: wait_group
  // S-1; else wait_group 0 at the level-0 barrier) covers it too, and the level-0 barrier
  // publishes it. Without loop loads there is no such wait: wait here.
  bool need_sync = inits, loop_loads = false, hoisted = false;
  for (const Step& s : k.loop_steps) {
    if (s.kind != StepKind::load) continue;
    loop_loads = loop_loads || !s.hoisted;
    if (!s.hoisted) continue;
    WEFT_CHECK(s.attrs.get_int_or("fmap", -1) < 0, "kernel {}: hoisted load {} has an fmap", k.name,
               s.outputs[0]);
    if (!hoisted) line("// loop-invariant tiles, loaded once");
    hoisted = true;
    emit_load(k, s, "0", "");
  }
  if (hoisted) {
    line("weft_cp_async_commit();");
    if (!loop_loads) {
      line("weft_cp_async_wait<0>();");
      need_sync = true;
    }
  }
  if (need_sync) sync();

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
    sync();
  }
  for (const Step& s : k.post_steps) block_step(k, s);
  if (loads_in_flight_) line("weft_cp_async_wait<0>();");
  close();
  if (fit_) return;
  // The kernel: a thin wrapper passing the block's coordinates and its dynamic shared memory.
  line("WEFT_KERNEL({0}_threads) {0}({1}) {{", k.name, params(k));
  line("  {}_block({}, weft_bid_x(), weft_bid_y(), weft_bid_z(), weft_smem_base());", k.name,
       args(k));
  line("}}");
}

void Emitter::issue_loads(const KernelPlan& k, const std::string& f) {
  open(fmt::format("if ({} < {}) {{", f, k.loop));
  for (const Step& s : k.loop_steps)
    if (s.kind == StepKind::load && !s.hoisted)
      emit_load(k, s, f, fmt::format("{} % {}", f, k.stages));
  close();
  line("weft_cp_async_commit();");
}

}  // namespace weft::cuda_emit
