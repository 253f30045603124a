// Abstract expressions of µGraph tensors, dispatched on the operator table's classes.
#include "absexpr/of_graph.h"

#include "core/error.h"

namespace weft {
namespace {

TermOp uninterpreted(OpKind k) {
  switch (k) {
    case OpKind::exp:
      return TermOp::exp;
    case OpKind::sqrt:
      return TermOp::sqrt;
    case OpKind::silu:
      return TermOp::silu;
    case OpKind::gelu:
      return TermOp::gelu;
    case OpKind::relu:
      return TermOp::relu;
    default:
      break;
  }
  WEFT_CHECK(false, "{} is not an uninterpreted unary operator", op_info(k).name);
  return TermOp::var;
}

// Elements reduced per result element by a reduction over `dim` to `to` groups.
int64_t reduced_elements(const Graph& g, const Op& op) {
  const Shape& s = g.type(op.inputs.at(0)).shape;
  int64_t dim = op.attrs.get_int("dim");
  WEFT_CHECK(dim >= 0 && dim < static_cast<int64_t>(s.size()), "reduction dim {} out of range",
             dim);
  int64_t to = op.attrs.get_int_or("to", 1);
  return s[static_cast<size_t>(dim)] / to;
}

}  // namespace

std::vector<TermId> abstract_op(const Graph& g, const Op& op, const std::vector<TermId>& in,
                                TermStore& store) {
  const OpInfo& info = op_info(op.kind);
  WEFT_CHECK(in.size() == op.inputs.size(), "{}: {} input terms for {} operands", info.name,
             in.size(), op.inputs.size());
  auto one = [](TermId t) { return std::vector<TermId>{t}; };
  switch (info.op_class) {
    case OpClass::unary:
      switch (op.kind) {
        case OpKind::sqr:
          return one(store.mul(in[0], in[0]));
        case OpKind::scale:
          return one(in[0]);  // constants are abstracted away (notes §2)
        case OpKind::shift:
          // A zero offset is the identity; any other is add(x, const), one constant for all.
          if (op.attrs.get_rational("offset") == Rational(0)) return one(in[0]);
          return one(store.add(in[0], store.cst()));
        default:
          return one(store.unary(uninterpreted(op.kind), in[0]));
      }
    case OpClass::binary:
      switch (op.kind) {
        case OpKind::add:
        case OpKind::sub:
          return one(store.add(in[0], in[1]));
        case OpKind::mul:
          return one(store.mul(in[0], in[1]));
        case OpKind::div:
          return one(store.div(in[0], in[1]));
        default:
          break;
      }
      break;
    case OpClass::matmul:
      return one(store.sum(g.type(op.inputs[0]).shape.back(), store.mul(in[0], in[1])));
    case OpClass::reduction: {
      int64_t k = reduced_elements(g, op);
      // mean = sum then scale; the scale is abstracted away.
      return one(op.kind == OpKind::max ? store.max(k, in[0]) : store.sum(k, in[0]));
    }
    case OpClass::movement:
      if (op.kind == OpKind::concat) {
        // Tiles of one expression joined stay that expression (like accum_concat); different
        // expressions are joined by the uninterpreted `cat`.
        TermId t = in[0];
        bool same = true;
        for (TermId x : in) same &= x == in[0];
        if (!same)
          for (size_t i = 1; i < in.size(); ++i) t = store.cat(t, in[i]);
        return one(t);
      }
      return std::vector<TermId>(op.outputs.size(), in[0]);  // reshape, split, repeat
    case OpClass::composite: {
      int64_t k = g.type(op.inputs[0]).shape[static_cast<size_t>(op.attrs.get_int("dim"))];
      if (op.kind == OpKind::rms_norm) {
        TermId ms = store.sum(k, store.mul(in[0], in[0]));
        if (!(op.attrs.get_rational("eps") == Rational(0))) ms = store.add(ms, store.cst());
        return one(store.div(in[0], store.unary(TermOp::sqrt, ms)));
      }
      TermId e = store.unary(TermOp::exp, in[0]);
      return one(store.div(e, store.sum(k, e)));
    }
    case OpClass::structure:
      switch (op.kind) {
        case OpKind::accum_sum:
          return one(store.sum(g.loop, in[0]));
        case OpKind::accum_max:
          return one(store.max(g.loop, in[0]));
        default:
          return one(in[0]);  // iter, save, accum_concat
      }
    case OpClass::hierarchy: {
      WEFT_CHECK(op.body != nullptr, "{} op without a body", info.name);
      std::vector<TermId> vals = abstract_values(*op.body, store, in);
      std::vector<TermId> out;
      for (ValueId v : op.body->outputs) out.push_back(vals[static_cast<size_t>(v)]);
      return out;
    }
  }
  WEFT_CHECK(false, "no abstract expression for {}", info.name);
  return {};
}

std::vector<TermId> abstract_values(const Graph& g, TermStore& store,
                                    const std::vector<TermId>& inputs) {
  std::vector<TermId> vals(g.values.size(), kNoTerm);
  if (g.level == Level::kernel && inputs.empty()) {
    for (ValueId v : g.inputs) vals[static_cast<size_t>(v)] = store.var(g.value(v).name);
  } else {
    WEFT_CHECK(inputs.size() == g.inputs.size(), "{} input terms for {} graph inputs",
               inputs.size(), g.inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) vals[static_cast<size_t>(g.inputs[i])] = inputs[i];
  }
  for (const Op& op : g.ops) {
    std::vector<TermId> in;
    for (ValueId v : op.inputs) {
      WEFT_CHECK(vals[static_cast<size_t>(v)] != kNoTerm, "value {} used before it is defined",
                 g.value(v).name);
      in.push_back(vals[static_cast<size_t>(v)]);
    }
    std::vector<TermId> out = abstract_op(g, op, in, store);
    WEFT_CHECK(out.size() == op.outputs.size(), "{}: {} terms for {} results",
               op_info(op.kind).name, out.size(), op.outputs.size());
    for (size_t i = 0; i < out.size(); ++i) vals[static_cast<size_t>(op.outputs[i])] = out[i];
  }
  return vals;
}

std::vector<TermId> abstract_outputs(const Graph& g, TermStore& store) {
  std::vector<TermId> vals = abstract_values(g, store);
  std::vector<TermId> out;
  for (ValueId v : g.outputs) out.push_back(vals[static_cast<size_t>(v)]);
  return out;
}

}  // namespace weft
