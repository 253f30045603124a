// Abstract expressions of operators and µGraph tensors, from the operator table's symbolic facet.
#include "absexpr/of_graph.h"

#include <utility>

#include "core/error.h"
#include "ir/expand_composites.h"

namespace weft {
namespace {

// `t` times a constant, with constants as terms: mul(t, cst), or `t` when it is already a product
// with a constant (two scales are one; the e-graph would need cst = mul(cst, cst) to see it).
TermId times_constant(TermStore& store, TermId t) {
  const TermNode& n = store.node(t);
  if (n.op == TermOp::mul &&
      (store.node(n.a).op == TermOp::cst || store.node(n.b).op == TermOp::cst))
    return t;
  return store.mul(t, store.cst());
}

// A Lax formula's values in abstract expressions: terms, and constants, which are abstracted away
// (notes §2): multiplying or dividing by one is the identity, and adding one is add(x, const)
// unless it is zero; sub is add (signs are constants too); an operation on constants only is a
// constant. Only a constant's being zero matters, so a value is a term or one of two kinds of
// constant (this runs for every tensor the search makes: it stays small and branch-light). In a
// store with constants as terms, a non-zero attribute is a `factor`: multiplying or dividing a
// term by it is mul(x, cst); literals (signs, 1/2) stay abstracted away.
struct TermAlgebra {
  enum class Kind : uint8_t { term, constant, zero, factor };
  struct Value {
    TermId term;
    Kind kind;
  };
  TermStore& store;
  TermId a, b;
  bool attribute_is_zero;

  static Value constant(bool zero) { return {kNoTerm, zero ? Kind::zero : Kind::constant}; }
  Value x() const { return {a, Kind::term}; }
  Value y() const { return {b, Kind::term}; }
  Value attribute(const char*) const {
    if (!attribute_is_zero && store.constants_as_terms()) return {kNoTerm, Kind::factor};
    return constant(attribute_is_zero);
  }
  // A term times a constant: the term, or mul(term, cst) when the constant is a factor.
  Value scaled(Value t, Value c) {
    if (c.kind == Kind::factor) return {times_constant(store, t.term), Kind::term};
    return t;
  }
  Value literal(const Rational& r) const { return constant(r == Rational(0)); }
  Value add(Value l, Value r) {
    if (l.kind != Kind::term) std::swap(l, r);
    if (l.kind != Kind::term) return constant(l.kind == Kind::zero && r.kind == Kind::zero);
    if (r.kind == Kind::zero) return l;
    if (r.kind != Kind::term) return {store.add(l.term, store.cst()), Kind::term};
    return {store.add(l.term, r.term), Kind::term};
  }
  Value sub(Value l, Value r) { return add(l, r); }
  Value mul(Value l, Value r) {
    if (l.kind != Kind::term && r.kind != Kind::term)
      return constant(l.kind == Kind::zero || r.kind == Kind::zero);
    if (l.kind != Kind::term) return scaled(r, l);
    if (r.kind != Kind::term) return scaled(l, r);
    return {store.mul(l.term, r.term), Kind::term};
  }
  Value div(Value l, Value r) {
    if (r.kind != Kind::term) return scaled(l, r);
    if (l.kind != Kind::term) return {store.div(store.cst(), r.term), Kind::term};
    return {store.div(l.term, r.term), Kind::term};
  }
  Value exp(Value l) {
    if (l.kind != Kind::term) return constant(false);
    return {store.fn(OpKind::exp, l.term), Kind::term};
  }
};

// Evaluates an elementwise operator's formula over terms.
TermId formula_term(const Formula& f, TermId a, TermId b, bool constant_is_zero, TermStore& store) {
  TermAlgebra algebra{store, a, b, constant_is_zero};
  TermAlgebra::Value v = evaluate_formula(f, algebra);
  return v.kind == TermAlgebra::Kind::term ? v.term : store.cst();
}

// Each operator's abstract rule resolved once from its row into one step: the search asks for a
// term for every tensor it makes. A formula that is one operation on the operands and constants
// (every one in the table today) becomes a direct step with TermAlgebra's answer; others are
// evaluated in full. (AbstractTerm.StepsAgreeWithTheFormulas holds the two to the same terms.)
struct TermStep {
  enum class Kind : uint8_t {
    function,   // fn(kind, a): no Lax formula
    formula,    // formula_term
    operation,  // op(l, r) over the operands
    exp,        // fn(exp, l)
    operand,    // l: the other side was a constant
    shifted,    // l + const, or l when the constant is zero
    contraction,
    sum,
    max,
    select,
    none,  // no single-term rule
  };
  Kind kind = Kind::none;
  TermOp op = TermOp::add;
  bool l_is_y = false, r_is_y = false;
  bool zero_from_attribute = false;  // shifted: the rational attribute's zero-ness decides
  bool by_attribute = false;         // operand: the constant is the attribute (scale's factor)
  bool mean = false;                 // sum: a mean (its 1/k a constant)
  bool literal_zero = false;         // shifted by a literal: whether it is zero
};

TermStep resolve(const OpInfo& info) {
  using K = TermStep::Kind;
  TermStep s;
  switch (info.symbolic) {
    case Symbolic::elementwise:
      break;
    case Symbolic::contraction:
      s.kind = K::contraction;
      return s;
    case Symbolic::sum:
    case Symbolic::mean:  // the 1/k is a constant, abstracted away (unless constants are terms)
      s.kind = K::sum;
      s.mean = info.symbolic == Symbolic::mean;
      return s;
    case Symbolic::max:
      s.kind = K::max;
      return s;
    case Symbolic::select:
      s.kind = K::select;
      return s;
    case Symbolic::join:
    case Symbolic::expansion:
    case Symbolic::body:
    case Symbolic::none:  // model-only rows: a step no µGraph takes
      return s;
  }
  s.kind = K::formula;
  if (info.formula.empty()) {
    s.kind = K::function;
    return s;
  }
  if (info.formula.nodes.size() != 1) return s;
  const FormulaNode& n = info.formula.nodes[0];
  auto is_term = [](int8_t ref) { return ref == FormulaNode::kX || ref == FormulaNode::kY; };
  const bool l = is_term(n.a), r = n.op != FormulaOp::exp && is_term(n.b);
  auto constant_side = [&](int8_t ref) {
    s.zero_from_attribute = ref == FormulaNode::kAttribute;
    s.literal_zero = ref == FormulaNode::kLiteral && n.literal == Rational(0);
  };
  s.l_is_y = (l ? n.a : n.b) == FormulaNode::kY;
  s.r_is_y = n.b == FormulaNode::kY;
  switch (n.op) {
    case FormulaOp::exp:
      if (l) s.kind = K::exp;
      break;
    case FormulaOp::add:
    case FormulaOp::sub:  // sub is add
      if (l && r) {
        s.kind = K::operation;
        s.op = TermOp::add;
      } else if (l || r) {
        s.kind = K::shifted;
        constant_side(l ? n.b : n.a);
      }
      break;
    case FormulaOp::mul:
      if (l && r) {
        s.kind = K::operation;
        s.op = TermOp::mul;
      } else if (l || r) {
        s.kind = K::operand;
        s.by_attribute = (l ? n.b : n.a) == FormulaNode::kAttribute;
      }
      break;
    case FormulaOp::div:
      if (l && r) {
        s.kind = K::operation;
        s.op = TermOp::div;
      } else if (l) {
        s.kind = K::operand;
        s.by_attribute = n.b == FormulaNode::kAttribute;
      }
      break;
  }
  return s;
}

const std::vector<TermStep>& term_steps() {
  static const std::vector<TermStep> steps = [] {
    std::vector<TermStep> v(kNumOpKinds);
    for (const OpInfo& info : all_ops()) v[static_cast<size_t>(info.kind)] = resolve(info);
    return v;
  }();
  return steps;
}

}  // namespace

TermId abstract_term(OpKind kind, TermId a, TermId b, int64_t k, const Rational& constant,
                     TermStore& store) {
  using K = TermStep::Kind;
  const TermStep& s = term_steps()[static_cast<size_t>(kind)];
  const TermId l = s.l_is_y ? b : a;
  switch (s.kind) {
    case K::function:
      return store.fn(kind, a);
    case K::formula:
      return formula_term(op_info(kind).formula, a, b, constant == Rational(0), store);
    case K::operation:
      return store.make({s.op, 0, l, s.r_is_y ? b : a});
    case K::exp:
      return store.fn(OpKind::exp, l);
    case K::operand:
      if (s.by_attribute && constant != Rational(0) && store.constants_as_terms())
        return times_constant(store, l);
      return l;
    case K::shifted:
      if (s.zero_from_attribute ? constant == Rational(0) : s.literal_zero) return l;
      return store.add(l, store.cst());
    case K::contraction:
      return store.sum(k, store.mul(a, b));
    case K::sum:
      if (s.mean && store.constants_as_terms()) return times_constant(store, store.sum(k, a));
      return store.sum(k, a);
    case K::max:
      return store.max(k, a);
    case K::select:
      return a;
    case K::none:
      break;
  }
  WEFT_CHECK(false, "'{}' has no single-term abstract expression", op_info(kind).name);
  return a;
}

TermId abstract_formula_term(OpKind kind, TermId a, TermId b, const Rational& constant,
                             TermStore& store) {
  const OpInfo& info = op_info(kind);
  WEFT_CHECK(!info.formula.empty(), "'{}' has no formula", info.name);
  return formula_term(info.formula, a, b, constant == Rational(0), store);
}

std::vector<TermId> abstract_op(const Graph& g, const Op& op, const std::vector<TermId>& in,
                                TermStore& store) {
  const OpInfo& info = op_info(op.kind);
  WEFT_CHECK(in.size() == op.inputs.size(), "{}: {} input terms for {} operands", info.name,
             in.size(), op.inputs.size());
  auto outputs_of = [](const Graph& body, const std::vector<TermId>& vals) {
    std::vector<TermId> out;
    for (ValueId v : body.outputs) out.push_back(vals[static_cast<size_t>(v)]);
    return out;
  };
  switch (info.symbolic) {
    case Symbolic::elementwise:
    case Symbolic::contraction:
    case Symbolic::sum:
    case Symbolic::mean:
    case Symbolic::max: {
      const AttrSpec* c = rational_attr(info);
      return {abstract_term(op.kind, in.at(0), in.size() > 1 ? in[1] : kNoTerm,
                            combined_elements(g, op),
                            c ? op.attrs.get_rational(c->name) : Rational(0), store)};
    }
    case Symbolic::select:
      return std::vector<TermId>(op.outputs.size(), in.at(0));
    case Symbolic::join: {
      // Tiles of one expression joined stay that expression (like accum_concat); different
      // expressions are joined by the uninterpreted `cat`.
      TermId t = in.at(0);
      bool same = true;
      for (TermId x : in) same &= x == in[0];
      if (!same)
        for (size_t i = 1; i < in.size(); ++i) t = store.cat(t, in[i]);
      return {t};
    }
    case Symbolic::expansion: {
      Graph expanded = composite_expansion(g, op);
      return outputs_of(expanded, abstract_values(expanded, store, in));
    }
    case Symbolic::body:
      WEFT_CHECK(op.body != nullptr, "{} op without a body", info.name);
      return outputs_of(*op.body, abstract_values(*op.body, store, in));
    case Symbolic::none:
      break;
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
