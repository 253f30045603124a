// The ONNX converters of the operators exporters emit around attention masks, NaN guards and
// rotary tables: comparisons, logical operators, IsNaN/IsInf, variadic Max/Min/Mean, Cos/Sin, Where
// and the index gathers; with their rows of the converter table. Known operands fold, so shape
// arithmetic such as `Where(Equal(shape, -1), 1, shape)` (Expand's -1s) stays symbolic.
#ifdef WEFT_HAVE_ONNX
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/model_ops.h"
#include "onnx/convert_common.h"

namespace weft::onnx_import {
namespace {

// ---- folding ----

// Whether a (kind) b holds for every binding of the variables, fails for every one, or neither.
std::optional<bool> decide(I& imp, OpKind kind, const SymExpr& a, const SymExpr& b) {
  SymProver& p = imp.prover();
  auto is = [&](SymProof proof) { return proof.truth == SymTruth::proven_true; };
  auto when = [&](bool yes, bool no) -> std::optional<bool> {
    if (yes) return true;
    if (no) return false;
    return std::nullopt;
  };
  if (kind == OpKind::equal)
    return when(is(p.prove_eq(a, b)), is(p.prove_lt(a, b)) || is(p.prove_lt(b, a)));
  if (kind == OpKind::less) return when(is(p.prove_lt(a, b)), is(p.prove_le(b, a)));
  if (kind == OpKind::less_equal) return when(is(p.prove_le(a, b)), is(p.prove_lt(b, a)));
  if (kind == OpKind::greater) return when(is(p.prove_lt(b, a)), is(p.prove_le(a, b)));
  if (kind == OpKind::greater_equal) return when(is(p.prove_le(b, a)), is(p.prove_lt(a, b)));
  return std::nullopt;
}

// The operands' integer values when some is a shape vector and all are 0-d or 1-d integers known
// now, broadcast to one length; none otherwise.
std::optional<std::vector<std::vector<SymExpr>>> symbolic_operands(I& imp,
                                                                   const std::vector<Value>& in,
                                                                   bool& scalar) {
  bool any_dims = false;
  size_t n = 1;
  scalar = true;
  std::vector<std::vector<SymExpr>> out;
  for (const Value& v : in) {
    if (v.kind == VKind::runtime || folded_shape(v).size() > 1) return std::nullopt;
    any_dims = any_dims || v.kind == VKind::dims;
    auto ints = imp.ints_of(v);
    if (!ints) return std::nullopt;
    scalar = scalar && folded_shape(v).empty();
    if (ints->size() != 1) {
      if (n != 1 && n != ints->size())
        imp.fail(
            fmt::format("shape vectors of {} and {} values do not broadcast", n, ints->size()));
      n = ints->size();
    }
    out.push_back(*ints);
  }
  if (!any_dims) return std::nullopt;
  for (auto& v : out)
    if (v.size() == 1) v.resize(n, v[0]);
  return out;
}

// Constants through the row's real semantics with numpy broadcasting; none unless every operand
// is a constant.
std::optional<Tensor<double>> fold_constants(I& imp, const OpInfo& info,
                                             const std::vector<Value>& in, ScalarConstants k) {
  size_t r = 0;
  for (const Value& v : in) {
    if (v.kind != VKind::constant) return std::nullopt;
    r = std::max(r, v.data.shape.size());
  }
  Shape shape(r, 1);
  for (const Value& v : in)
    for (size_t i = 0; i < v.data.shape.size(); ++i) {
      int64_t d = v.data.shape[i];
      int64_t& o = shape[r - v.data.shape.size() + i];
      if (d != o && d != 1 && o != 1)
        imp.fail(fmt::format("operands of shape {} do not broadcast with the others",
                             shape_str(v.data.shape)));
      if (d != 1) o = d;
    }
  check_foldable(imp, shape);
  std::vector<std::vector<int64_t>> strides;
  for (const Value& v : in) strides.push_back(broadcast_strides(v.data.shape, shape));
  Tensor<double> out(shape, 0.0);
  for_each_index(shape, [&](int64_t o, const std::vector<int64_t>& idx) {
    double x[3] = {0, 0, 0};
    for (size_t j = 0; j < in.size(); ++j) {
      int64_t at = 0;
      for (size_t d = 0; d < r; ++d) at += idx[d] * strides[j][d];
      x[j] = in[j].data.data[static_cast<size_t>(at)];
    }
    out.data[static_cast<size_t>(o)] = info.real({x[0], x[1], x[2], k.k, k.k2});
  });
  return out;
}

// The table's elementwise operator `op` over `in` (numpy broadcasting): folded when the operands
// are known (constants by the row's semantics; shape vectors symbolically where `symbolic` can
// say), else bound at run time with operands aligned to one rank. `elem`: the ONNX type of the
// result.
Value elementwise(I& imp, const char* op, const std::vector<Value>& in, int elem, MAttrs attrs = {},
                  ScalarConstants k = {},
                  std::optional<SymExpr> (*symbolic)(I&, OpKind,
                                                     const std::vector<SymExpr>&) = nullptr) {
  const OpInfo& info = op_info(*op_by_name(op));
  bool scalar = false;
  if (symbolic)
    if (auto ops = symbolic_operands(imp, in, scalar)) {
      std::vector<SymExpr> out;
      bool all = true;
      for (size_t i = 0; i < (*ops)[0].size() && all; ++i) {
        std::vector<SymExpr> at;
        for (const auto& v : *ops) at.push_back(v[i]);
        auto e = symbolic(imp, info.kind, at);
        if (e) out.push_back(*e);
        all = e.has_value();
      }
      if (all) {
        Value v = dims_value(out, scalar);
        if (v.kind == VKind::constant) v.elem = elem;
        return v;
      }
    }
  if (auto t = fold_constants(imp, info, in, k)) return constant_value(std::move(*t), elem);
  int r = 0;
  for (const Value& v : in) r = std::max(r, broadcast_rank(imp, {&v}));
  std::vector<std::string> args;
  for (const Value& v : in) args.push_back(imp.to_rank(imp.runtime(with_rank(v, r)).first, r));
  Value out = imp.op(op, args, std::move(attrs));
  out.elem = elem;
  return out;
}

// A comparison of known integers, or max/min of them.
std::optional<SymExpr> symbolic_compare(I& imp, OpKind kind, const std::vector<SymExpr>& v) {
  if (kind == OpKind::maximum) return max(v[0], v[1]);
  if (kind == OpKind::minimum) return min(v[0], v[1]);
  auto b = decide(imp, kind, v[0], v[1]);
  if (!b) return std::nullopt;
  return SymExpr(*b ? 1 : 0);
}

// where(c, a, b) of known integers: the chosen one where the condition is known.
std::optional<SymExpr> symbolic_where(I&, OpKind, const std::vector<SymExpr>& v) {
  auto c = v[0].as_constant();
  if (!c) return std::nullopt;
  return *c != 0 ? v[1] : v[2];
}

std::vector<Value> inputs(I& imp) {
  std::vector<Value> in;
  for (int i = 0; i < imp.num_inputs(); ++i) in.push_back(imp.in(i));
  return in;
}

void convert_compare(I& imp, const char* op) {
  imp.out(0, elementwise(imp, op, inputs(imp), TensorProto::BOOL, {}, {}, symbolic_compare));
}

void convert_logical(I& imp, const char* op) {
  imp.out(0, elementwise(imp, op, inputs(imp), TensorProto::BOOL));
}

// Variadic Max/Min: a chain of the two-operand rows; Mean: the sum scaled by 1/n.
void convert_extremum(I& imp, const char* op) {
  std::vector<Value> in = inputs(imp);
  if (in.empty()) imp.fail("needs at least one input");
  Value acc = in[0];
  for (size_t i = 1; i < in.size(); ++i)
    acc = elementwise(imp, op, {acc, in[i]}, in[0].elem, {}, {}, symbolic_compare);
  imp.out(0, acc);
}

void convert_mean(I& imp) {
  std::vector<Value> in = inputs(imp);
  if (in.empty()) imp.fail("needs at least one input");
  Value acc = in[0];
  for (size_t i = 1; i < in.size(); ++i) acc = arith(imp, Arith::add, acc, in[i]);
  Value n = constant_value(Tensor<double>(Shape{}, static_cast<double>(in.size())), in[0].elem);
  imp.out(0, in.size() == 1 ? acc : arith(imp, Arith::div, acc, n));
}

void convert_unary(I& imp, const char* op) {
  imp.out(0, elementwise(imp, op, {imp.in(0)}, imp.in(0).elem));
}

void convert_is_nan(I& imp) {
  imp.out(0, elementwise(imp, "is_nan", {imp.in(0)}, TensorProto::BOOL));
}

void convert_is_inf(I& imp) {
  int64_t pos = imp.attr_int("detect_positive", 1), neg = imp.attr_int("detect_negative", 1);
  imp.out(0, elementwise(imp, "is_inf", {imp.in(0)}, TensorProto::BOOL,
                         {{"detect_positive", SymExpr(pos)}, {"detect_negative", SymExpr(neg)}},
                         {static_cast<double>(pos), static_cast<double>(neg)}));
}

void convert_where(I& imp) {
  std::vector<Value> in = inputs(imp);
  if (in.size() != 3) imp.fail("Where needs three inputs");
  int elem = in[1].kind == VKind::dims ? in[2].elem : in[1].elem;
  imp.out(0, elementwise(imp, "where", in, elem, {}, {}, symbolic_where));
}

void convert_gather_elements(I& imp) {
  std::string x = imp.rt(0), ids = imp.rt(1);
  int64_t a = imp.axis(imp.attr_int("axis", 0), imp.rank(x));
  Value out = imp.op("gather_elements", {x, ids}, {{"axis", SymExpr(a)}});
  out.elem = imp.in(0).elem;
  imp.out(0, out);
}

void convert_gather_nd(I& imp) {
  std::string x = imp.rt(0), ids = imp.rt(1);
  Value out =
      imp.op("gather_nd", {x, ids}, {{"batch_dims", SymExpr(imp.attr_int("batch_dims", 0))}});
  out.elem = imp.in(0).elem;
  imp.out(0, out);
}

void convert_scatter_nd(I& imp) {
  const std::string reduction = imp.attr_string("reduction", "none");
  const char* names[] = {"none", "add", "mul", "max", "min"};
  int64_t code = -1;
  for (int64_t i = 0; i < 5; ++i)
    if (reduction == names[i]) code = i;
  if (code < 0)
    imp.fail(fmt::format("ScatterND reduction '{}' (none, add, mul, max, min)", reduction));
  std::string x = imp.rt(0), ids = imp.rt(1), updates = imp.rt(2);
  Value out = imp.op("scatter_nd", {x, ids, updates}, {{"reduction", SymExpr(code)}});
  out.elem = imp.in(0).elem;
  imp.out(0, out);
}

}  // namespace

// Comparisons, logical operators, value tests, variadic extrema, trigonometry, Where, gathers.
void add_logic_converters(std::vector<Converter>& table) {
  table.insert(
      table.end(),
      {
          // clang-format off
      {"Equal", 7, kMaxOpset, [](I& i) { convert_compare(i, "equal"); }},
      {"Less", 7, kMaxOpset, [](I& i) { convert_compare(i, "less"); }},
      {"LessOrEqual", 12, kMaxOpset, [](I& i) { convert_compare(i, "less_equal"); }},
      {"Greater", 7, kMaxOpset, [](I& i) { convert_compare(i, "greater"); }},
      {"GreaterOrEqual", 12, kMaxOpset, [](I& i) { convert_compare(i, "greater_equal"); }},
      {"And", 7, kMaxOpset, [](I& i) { convert_logical(i, "logical_and"); }},
      {"Or", 7, kMaxOpset, [](I& i) { convert_logical(i, "logical_or"); }},
      {"Xor", 7, kMaxOpset, [](I& i) { convert_logical(i, "logical_xor"); }},
      {"ScatterND", 11, kMaxOpset, convert_scatter_nd},
      {"Not", 1, kMaxOpset, [](I& i) { convert_logical(i, "logical_not"); }},
      {"IsNaN", 9, kMaxOpset, convert_is_nan},
      {"IsInf", 10, kMaxOpset, convert_is_inf},
      {"Max", 8, kMaxOpset, [](I& i) { convert_extremum(i, "maximum"); }},
      {"Min", 8, kMaxOpset, [](I& i) { convert_extremum(i, "minimum"); }},
      {"Mean", 8, kMaxOpset, convert_mean},
      {"Cos", 7, kMaxOpset, [](I& i) { convert_unary(i, "cos"); }},
      {"Sin", 7, kMaxOpset, [](I& i) { convert_unary(i, "sin"); }},
      {"Where", 9, kMaxOpset, convert_where},
      {"GatherElements", 11, kMaxOpset, convert_gather_elements},
      {"GatherND", 11, kMaxOpset, convert_gather_nd},
          // clang-format on
      });
}

}  // namespace weft::onnx_import
#endif
