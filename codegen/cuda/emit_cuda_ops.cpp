// CUDA emission of the operators' element loops, shared by block functions and library kernels:
// elementwise, reductions (a warp or a thread per result) and data movement.
#include "codegen/cuda/cuda_emitter.h"

#include <fmt/format.h>

#include "core/error.h"

namespace weft::cuda_emit {

void Emitter::elementwise(const Step& s, const std::vector<Operand>& ins, const Operand& out,
                          const Workers& w) {
  auto idx = open_elements(out.shape, w);
  std::vector<std::string> args;
  for (const Operand& in : ins) args.push_back(load(in, idx));
  line("weft_st(&{}, {});", ref(out, idx), scalar_expr(s, args));
  close();
}

void Emitter::reduction(const Step& s, const Operand& in, const Operand& out, const Workers& w) {
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
  // Strided groups (the operator's semantics, ir/ops.cpp): result element g combines elements
  // g, g + to, g + 2 to, ... of the reduced dim, the layout an omap gives per-block partial
  // results side by side.
  in_idx[dim] = idx[dim] == "0" ? "j" : fmt::format("j * {} + {}", out.shape[dim], idx[dim]);
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

void Emitter::movement(const Step& s, const std::vector<Operand>& ins,
                       const std::vector<Operand>& outs, const Workers& w) {
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
      WEFT_CASES_NOT_MOVEMENT
      break;
  }
  WEFT_CHECK(false, "{} is not a movement operator", op_info(s.op).name);
}

}  // namespace weft::cuda_emit
