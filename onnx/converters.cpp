// The ONNX converter table: one row per op_type and opset range, each turning a node into
// folded constants, symbolic shape arithmetic or IR bindings (docs/onnx.md lists the rows).
#ifdef WEFT_HAVE_ONNX
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "model/model_ops.h"
#include "onnx/importer.h"
#include "core/dtype_convert.h"

namespace weft::onnx_import {
namespace {

using I = Importer;

SymExpr product(const std::vector<SymExpr>& d, size_t from, size_t to) {
  SymExpr p(1);
  for (size_t i = from; i < to && i < d.size(); ++i) p = p * d[i];
  return p;
}

std::vector<SymExpr> syms(const std::vector<int64_t>& v) {
  return std::vector<SymExpr>(v.begin(), v.end());
}

MAttrs dim_attr(int64_t d) {
  return {{"dim", SymExpr(d)}};
}

Rational rational_attr(const I& imp, double d, const char* what) {
  auto r = rational_of(d);
  if (!r) imp.fail(fmt::format("{} = {} is not a finite number weft can hold exactly", what, d));
  return *r;
}

// ---- constant folding helpers ----

// Folded constants stay small: a larger one is a model weft does not fold (and no allocation
// of a hostile size happens at import).
void check_foldable(const I& imp, const Shape& shape, int64_t limit = int64_t{1} << 26) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) imp.fail(fmt::format("a constant of shape {}", shape_str(shape)));
    if (d > 0 && n > limit / d)
      imp.fail(fmt::format("a constant of shape {} is too large to fold at import time",
                           shape_str(shape)));
    n *= d;
  }
}

// numpy broadcasting of two constants through `f`.
Tensor<double> broadcast_apply(const I& imp, const Tensor<double>& a, const Tensor<double>& b,
                               double (*f)(double, double)) {
  size_t r = std::max(a.shape.size(), b.shape.size());
  auto aligned = [&](const Shape& s) {
    Shape out(r - s.size(), 1);
    out.insert(out.end(), s.begin(), s.end());
    return out;
  };
  Shape sa = aligned(a.shape), sb = aligned(b.shape), so(r);
  for (size_t i = 0; i < r; ++i) {
    if (sa[i] != sb[i] && sa[i] != 1 && sb[i] != 1)
      imp.fail(fmt::format("operands of shapes {} and {} do not broadcast", shape_str(a.shape),
                           shape_str(b.shape)));
    so[i] = sa[i] == 1 ? sb[i] : sa[i];
  }
  check_foldable(imp, so);
  Tensor<double> out(so, 0.0);
  std::vector<int64_t> idx(r, 0);
  for (int64_t n = 0; n < out.numel(); ++n) {
    int64_t oa = 0, ob = 0;
    for (size_t i = 0; i < r; ++i) {
      oa = oa * sa[i] + (sa[i] == 1 ? 0 : idx[i]);
      ob = ob * sb[i] + (sb[i] == 1 ? 0 : idx[i]);
    }
    out.data[static_cast<size_t>(n)] =
        f(a.data[static_cast<size_t>(oa)], b.data[static_cast<size_t>(ob)]);
    for (size_t i = r; i-- > 0;) {
      if (++idx[i] < so[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

// `v` (a constant or dims value) with a new shape of the same element count.
Value refold(const I& imp, const Value& v, const std::vector<int64_t>& shape) {
  check_foldable(imp, shape, int64_t{1} << 40);  // no new data: only the count must be sane
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (v.kind == VKind::dims) {
    if (n != static_cast<int64_t>(v.syms.size()) || shape.size() > 1)
      imp.fail(fmt::format("cannot give a shape vector of {} values the shape {}", v.syms.size(),
                           shape_str(shape)));
    return dims_value(v.syms, shape.empty());
  }
  if (n != v.data.numel())
    imp.fail(fmt::format("cannot reshape a constant of shape {} to {}", shape_str(v.data.shape),
                         shape_str(shape)));
  Value out = constant_value(Tensor<double>(shape, v.data.data), v.elem);
  out.name = v.name;  // still the same weight, so it keeps its name
  return out;
}

std::vector<int64_t> const_shape_of(const I& imp, const std::vector<SymExpr>& d) {
  std::vector<int64_t> out;
  for (const SymExpr& s : d) {
    auto c = s.as_constant();
    if (!c) imp.fail(fmt::format("a folded constant needs a constant shape, not {}", s.str()));
    out.push_back(*c);
  }
  return out;
}

// The shape of a non-run-time value.
std::vector<int64_t> folded_shape(const Value& v) {
  if (v.kind == VKind::dims)
    return v.scalar ? std::vector<int64_t>{}
                    : std::vector<int64_t>{static_cast<int64_t>(v.syms.size())};
  return v.data.shape;
}

// Reshape for any kind of value: folded for constants and shape vectors.
Value reshape_value(I& imp, const Value& v, const std::vector<SymExpr>& shape) {
  if (v.kind != VKind::runtime) return refold(imp, v, const_shape_of(imp, shape));
  return imp.op("reshape", {v.name}, {{"shape", shape}});
}

// ---- elementwise ----

void unary(I& imp, const char* op) {
  imp.out(0, imp.op(op, {imp.rt(0)}));
}

enum class Arith : uint8_t { add, sub, mul, div, pow };

// Numpy broadcasting aligns ranks by prepending size-1 dims: done on a constant's data, since
// the table's reshape (to_rank) cannot take a 0-d operand.
Value with_rank(Value v, int r) {
  if (v.kind != VKind::constant || static_cast<int>(v.data.shape.size()) >= r) return v;
  v.data.shape.insert(v.data.shape.begin(), static_cast<size_t>(r) - v.data.shape.size(), 1);
  return v;
}

// The rank numpy broadcasting gives operands, run-time or constant.
int broadcast_rank(I& imp, std::initializer_list<const Value*> vs) {
  int r = 0;
  for (const Value* v : vs)
    r = std::max(
        r, v->kind == VKind::runtime ? imp.rank(v->name) : static_cast<int>(v->data.shape.size()));
  return r;
}

// a (k) b with numpy broadcasting: folded when both are known, scale/shift for a run-time
// operand and a constant scalar, else the table's operator on operands of equal rank.
Value arith(I& imp, Arith k, const Value& a, const Value& b) {
  const char* names[] = {"add", "sub", "mul", "div", "pow"};
  const char* name = names[static_cast<int>(k)];
  if (a.kind != VKind::runtime && b.kind != VKind::runtime) {
    auto ia = imp.ints_of(a), ib = imp.ints_of(b);
    bool integral = (a.kind == VKind::dims || is_integer_type(a.elem)) &&
                    (b.kind == VKind::dims || is_integer_type(b.elem));
    if (integral && ia && ib && (a.kind == VKind::dims || b.kind == VKind::dims) &&
        k != Arith::pow) {
      size_t n = std::max(ia->size(), ib->size());
      if ((ia->size() != n && ia->size() != 1) || (ib->size() != n && ib->size() != 1))
        imp.fail(fmt::format("shape vectors of {} and {} values do not broadcast", ia->size(),
                             ib->size()));
      std::vector<SymExpr> out;
      for (size_t i = 0; i < n; ++i) {
        const SymExpr& x = (*ia)[ia->size() == 1 ? 0 : i];
        const SymExpr& y = (*ib)[ib->size() == 1 ? 0 : i];
        switch (k) {
          case Arith::add:
            out.push_back(x + y);
            break;
          case Arith::sub:
            out.push_back(x - y);
            break;
          case Arith::mul:
            out.push_back(x * y);
            break;
          case Arith::div:
            if (y.as_constant() == 0) imp.fail("integer division by zero");
            out.push_back(floordiv(x, y));
            break;
          case Arith::pow:
            break;
        }
      }
      bool scalar = folded_shape(a).empty() && folded_shape(b).empty();
      return dims_value(out, scalar);
    }
    if (a.kind == VKind::dims || b.kind == VKind::dims)
      imp.fail(fmt::format("'{}' of a shape vector with non-integer values", name));
    static double (*const fns[])(double, double) = {
        [](double x, double y) { return x + y; }, [](double x, double y) { return x - y; },
        [](double x, double y) { return x * y; }, [](double x, double y) { return x / y; },
        [](double x, double y) { return std::pow(x, y); }};
    Tensor<double> t = broadcast_apply(imp, a.data, b.data, fns[static_cast<int>(k)]);
    if (integral)  // integer division truncates; integer results stay integers
      for (double& x : t.data) x = std::trunc(x);
    return constant_value(std::move(t), a.elem);
  }
  // One run-time operand and a constant scalar: scale / shift / sqr / sqrt.
  auto scalar_of = [&](const Value& v, int other_rank) -> std::optional<double> {
    if (v.kind != VKind::constant || v.data.numel() != 1 ||
        static_cast<int>(v.data.shape.size()) > other_rank)
      return std::nullopt;
    return v.data.data[0];
  };
  if (a.kind == VKind::runtime) {
    if (auto c = scalar_of(b, imp.rank(a.name))) {
      std::optional<Rational> r = rational_of(*c);
      if (r) switch (k) {
          case Arith::add:
            return imp.op("shift", {a.name}, {{"offset", *r}});
          case Arith::sub:
            if (auto neg = rational_of(-*c)) return imp.op("shift", {a.name}, {{"offset", *neg}});
            break;
          case Arith::mul:
            return imp.op("scale", {a.name}, {{"factor", *r}});
          case Arith::div:
            if (*c != 0)
              if (auto inv = rational_of(1.0 / *c))
                return imp.op("scale", {a.name}, {{"factor", *inv}});
            break;
          case Arith::pow:
            if (*c == 1) return a;
            if (*c == 2) return imp.op("sqr", {a.name});
            if (*c == 0.5) return imp.op("sqrt", {a.name});
            break;
        }
    }
  }
  if (b.kind == VKind::runtime && (k == Arith::add || k == Arith::mul)) {
    if (scalar_of(a, imp.rank(b.name))) return arith(imp, k, b, a);
  }
  if (b.kind == VKind::runtime && k == Arith::sub) {  // c - x = shift(neg(x), c)
    if (auto c = scalar_of(a, imp.rank(b.name)))
      if (auto r = rational_of(*c))
        return imp.op("shift", {imp.op("neg", {b.name}).name}, {{"offset", *r}});
  }
  int r = broadcast_rank(imp, {&a, &b});
  std::string x = imp.runtime(with_rank(a, r)).first, y = imp.runtime(with_rank(b, r)).first;
  x = imp.to_rank(x, r);
  y = imp.to_rank(y, r);
  Value out = imp.op(name, {x, y});
  // Integer tensors run as floats: an integer quotient truncates toward zero (ONNX's Div).
  bool integral = is_integer_type(a.kind == VKind::runtime ? a.elem : b.elem);
  if (k == Arith::div && integral)
    out = imp.op("cast", {out.name}, {{"to", SymExpr(a.kind == VKind::runtime ? a.elem : b.elem)}});
  out.elem = a.kind == VKind::runtime ? a.elem : b.elem;
  return out;
}

// The table has no elementwise max/min/abs, but relu with constant shifts spells them exactly:
// max(x, lo) = relu(x - lo) + lo, min(y, hi) = hi - relu(hi - y), |x| = relu(x) + relu(-x).
std::string shifted(I& imp, const std::string& x, double c) {
  if (c == 0) return x;
  return imp.op("shift", {x}, {{"offset", rational_attr(imp, c, "a Clip bound")}}).name;
}

void convert_clip(I& imp) {
  std::string x = imp.rt(0);
  std::optional<double> lo, hi;
  auto bound = [&](int input, const char* attr) -> std::optional<double> {
    if (imp.opset() < 11) {
      if (const AttributeProto* a = imp.attr(attr)) return a->f();
      return std::nullopt;
    }
    if (!imp.has_input(input)) return std::nullopt;
    const Value& v = imp.in(input);
    if (v.kind != VKind::constant || v.data.numel() != 1)
      imp.fail(fmt::format("Clip's {} must be a constant scalar", attr));
    return v.data.data[0];
  };
  lo = bound(1, "min");
  hi = bound(2, "max");
  if (lo && std::isfinite(*lo)) {
    x = imp.op("relu", {shifted(imp, x, -*lo)}).name;
    x = shifted(imp, x, *lo);
  }
  if (hi && std::isfinite(*hi)) {
    std::string d = shifted(imp, imp.op("neg", {x}).name, *hi);  // hi - y
    x = shifted(imp, imp.op("neg", {imp.op("relu", {d}).name}).name, *hi);
  }
  Value out;
  out.name = x;
  out.type = imp.type_of(x);
  imp.out(0, out);
}

void convert_abs(I& imp) {
  std::string x = imp.rt(0);
  Value pos = imp.op("relu", {x});
  Value neg = imp.op("relu", {imp.op("neg", {x}).name});
  imp.out(0, imp.op("add", {pos.name, neg.name}));
}

void convert_leaky_relu(I& imp) {
  std::string x = imp.rt(0);
  Rational alpha = rational_attr(imp, -imp.attr_float("alpha", 0.01), "alpha");
  Value pos = imp.op("relu", {x});
  Value neg = imp.op("relu", {imp.op("neg", {x}).name});
  imp.out(0, imp.op("add", {pos.name, imp.op("scale", {neg.name}, {{"factor", alpha}}).name}));
}

void convert_reciprocal(I& imp) {
  std::string x = imp.rt(0);
  Value one = constant_value(Tensor<double>(Shape(static_cast<size_t>(imp.rank(x)), 1), 1.0),
                             TensorProto::FLOAT);
  imp.out(0, imp.op("div", {imp.runtime(one).first, x}));
}

template <Arith K>
void convert_arith(I& imp) {
  imp.out(0, arith(imp, K, imp.in(0), imp.in(1)));
}

void convert_sum(I& imp) {
  Value acc = imp.in(0);
  for (int i = 1; i < imp.num_inputs(); ++i) acc = arith(imp, Arith::add, acc, imp.in(i));
  imp.out(0, acc);
}

// ---- linear algebra ----

void convert_matmul(I& imp) {
  std::string a = imp.rt(0), b = imp.rt(1);
  int ra = imp.rank(a), rb = imp.rank(b);
  if (ra == 0 || rb == 0) imp.fail("MatMul operands must have rank >= 1");
  bool va = ra == 1, vb = rb == 1;
  if (va) a = imp.reshape(a, {1, imp.dims(a)[0]});
  if (vb) b = imp.reshape(b, {imp.dims(b)[0], 1});
  int r = std::max(imp.rank(a), imp.rank(b));
  Value y = imp.op("matmul", {imp.to_rank(a, r), imp.to_rank(b, r)});
  if (va || vb) {
    auto d = imp.dims(y.name);
    if (vb) d.erase(d.end() - 1);
    if (va) d.erase(d.end() - (vb ? 1 : 2));
    y = imp.op("reshape", {y.name}, {{"shape", d}});
  }
  imp.out(0, y);
}

void convert_gemm(I& imp) {
  std::string a = imp.rt(0), b = imp.rt(1);
  if (imp.rank(a) != 2 || imp.rank(b) != 2) imp.fail("Gemm operands must have rank 2");
  const std::vector<SymExpr> swap = {1, 0};
  if (imp.attr_int("transA", 0)) a = imp.op("permute", {a}, {{"perm", swap}}).name;
  if (imp.attr_int("transB", 0)) b = imp.op("permute", {b}, {{"perm", swap}}).name;
  Value y = imp.op("matmul", {a, b});
  double alpha = imp.attr_float("alpha", 1.0), beta = imp.attr_float("beta", 1.0);
  if (alpha != 1.0) y = imp.op("scale", {y.name}, {{"factor", rational_attr(imp, alpha, "alpha")}});
  if (imp.has_input(2) && beta != 0.0) {
    Value c = imp.in(2);
    if (beta != 1.0) {
      Value bv = constant_value(Tensor<double>(Shape{}, beta), TensorProto::FLOAT);
      c = arith(imp, Arith::mul, c, bv);
    }
    y = arith(imp, Arith::add, y, c);
  }
  imp.out(0, y);
}

// ---- normalization and reductions ----

void convert_softmax(I& imp) {
  std::string x = imp.rt(0);
  int r = imp.rank(x);
  if (imp.opset() >= 13) {
    int64_t a = imp.axis(imp.attr_int("axis", -1), r);
    imp.out(0, imp.op("softmax_safe", {x}, dim_attr(a)));
    return;
  }
  // Before opset 13 the input is coerced to 2-D at `axis`.
  int64_t a = imp.axis(imp.attr_int("axis", 1), r);
  auto d = imp.dims(x);
  auto flat = imp.reshape(
      x, {product(d, 0, static_cast<size_t>(a)), product(d, static_cast<size_t>(a), d.size())});
  Value y = imp.op("softmax_safe", {flat}, dim_attr(-1));
  imp.out(0, imp.op("reshape", {y.name}, {{"shape", d}}));
}

// log(sum(exp(x - m))) + m over `dim` (keeping it), m the max: no overflow for large inputs.
Value log_sum_exp(I& imp, const std::string& x, int64_t dim) {
  Value m = imp.op("max", {x}, dim_attr(dim));
  Value c = imp.op("sub", {x, m.name});
  Value l = imp.op("log", {imp.op("sum", {imp.op("exp", {c.name}).name}, dim_attr(dim)).name});
  return imp.op("add", {l.name, m.name});
}

void convert_log_softmax(I& imp) {
  std::string x = imp.rt(0);
  int r = imp.rank(x);
  auto d = imp.dims(x);
  int64_t a = imp.axis(imp.attr_int("axis", imp.opset() >= 13 ? -1 : 1), r);
  std::string in = x;
  int64_t dim = a;
  if (imp.opset() < 13) {  // coerced to 2-D at axis, as Softmax
    in = imp.reshape(
        x, {product(d, 0, static_cast<size_t>(a)), product(d, static_cast<size_t>(a), d.size())});
    dim = 1;
  }
  // x - m - log(sum(exp(x - m))), from the centered values.
  Value m = imp.op("max", {in}, dim_attr(dim));
  std::string centered = imp.op("sub", {in, m.name}).name;
  Value l = imp.op("log", {imp.op("sum", {imp.op("exp", {centered}).name}, dim_attr(dim)).name});
  Value y = imp.op("sub", {centered, l.name});
  imp.out(0, imp.op("reshape", {y.name}, {{"shape", d}}));
}

void convert_layer_norm(I& imp) {
  imp.only_outputs(3);
  std::string x = imp.rt(0);
  int r = imp.rank(x);
  auto a = static_cast<size_t>(imp.axis(imp.attr_int("axis", -1), r));
  auto d = imp.dims(x);
  std::vector<SymExpr> flat(d.begin(), d.begin() + static_cast<long>(a));
  flat.push_back(product(d, a, d.size()));
  std::string xf = imp.reshape(x, flat);
  Rational eps = rational_attr(imp, imp.attr_float("epsilon", 1e-5), "epsilon");
  Value y = imp.op("layer_norm", {xf}, {{"eps", eps}});
  y = imp.op("reshape", {y.name}, {{"shape", d}});
  // The optional Mean and InvStdDev outputs: statistics over the normalized dims, kept as 1s.
  auto wanted = [&](int i) {
    return i < imp.node().output_size() && !imp.node().output(i).empty();
  };
  if (wanted(1) || wanted(2)) {
    std::vector<SymExpr> stat_shape(d.begin(), d.begin() + static_cast<long>(a));
    stat_shape.resize(d.size(), SymExpr(1));
    Value mean = imp.op("mean", {xf}, dim_attr(-1));
    Value var =
        imp.op("mean", {imp.op("sqr", {imp.op("sub", {xf, mean.name}).name}).name}, dim_attr(-1));
    Value sd = imp.op("sqrt", {imp.op("shift", {var.name}, {{"offset", eps}}).name});
    Value one = constant_value(Tensor<double>(Shape(flat.size(), 1), 1.0), TensorProto::FLOAT);
    std::string ones = imp.runtime(one).first;
    imp.out(1, imp.op("reshape", {mean.name}, {{"shape", stat_shape}}));
    imp.out(2, imp.op("reshape", {imp.op("div", {ones, sd.name}).name}, {{"shape", stat_shape}}));
  }
  y = arith(imp, Arith::mul, y, imp.in(1));
  if (imp.has_input(2)) y = arith(imp, Arith::add, y, imp.in(2));
  imp.out(0, y);
}

// ReduceX: axes from the attribute (older opsets) or the second input.
// ReduceSumSquare squares first (`square`); ReduceLogSum takes the log after (`log`);
// ReduceLogSumExp is `op` "logsumexp".
template <int kAxesInputFrom>
void convert_reduce(I& imp, const char* op, bool square = false, bool log = false) {
  std::string x = imp.rt(0);
  int r = imp.rank(x);
  std::optional<std::vector<int64_t>> axes;
  if (imp.opset() >= kAxesInputFrom) {
    if (imp.has_input(1)) axes = imp.const_ints_input(1, "axes");
  } else {
    axes = imp.attr_ints("axes");
  }
  if (!axes || axes->empty()) {
    if (imp.opset() >= kAxesInputFrom && imp.attr_int("noop_with_empty_axes", 0)) {
      imp.out(0, square ? imp.op("sqr", {x}) : imp.in(0));
      return;
    }
    axes = std::vector<int64_t>(static_cast<size_t>(r));
    std::iota(axes->begin(), axes->end(), 0);
  }
  std::set<int64_t> norm;
  for (int64_t a : *axes) norm.insert(imp.axis(a, r));
  Value y = imp.in(0);
  if (square) y = imp.op("sqr", {x});
  for (int64_t a : norm) {
    if (std::string(op) == "logsumexp") {
      // Over several axes: the log-sum-exp of one axis feeds the next (log(sum exp) composes).
      y = log_sum_exp(imp, y.name, a);
    } else {
      y = imp.op(op, {y.name}, dim_attr(a));
    }
  }
  if (log) y = imp.op("log", {y.name});
  if (!imp.attr_int("keepdims", 1)) {
    auto d = imp.dims(y.name);
    std::vector<SymExpr> kept;
    for (int i = 0; i < r; ++i)
      if (!norm.count(i)) kept.push_back(d[static_cast<size_t>(i)]);
    y = imp.op("reshape", {y.name}, {{"shape", kept}});
  }
  imp.out(0, y);
}

void convert_batch_norm(I& imp) {
  imp.only_outputs(1);
  if (imp.attr_int("training_mode", 0))
    imp.fail("training_mode=1 is not supported (inference only)");
  std::string x = imp.rt(0);
  int r = imp.rank(x);
  if (r < 2) imp.fail("BatchNormalization needs an input of rank >= 2 ([N, C, ...])");
  // Per-channel operands as [1, C, 1, ...] so they broadcast in the table's operators.
  auto per_channel = [&](int i) {
    Value v = imp.in(i);
    std::vector<SymExpr> shape(static_cast<size_t>(r), SymExpr(1));
    shape[1] = imp.dims(x)[1];
    return imp.runtime(reshape_value(imp, v, shape)).first;
  };
  std::string scale = per_channel(1), bias = per_channel(2), mean = per_channel(3),
              var = per_channel(4);
  Rational eps = rational_attr(imp, imp.attr_float("epsilon", 1e-5), "epsilon");
  Value centered = imp.op("sub", {x, mean});
  Value sd = imp.op("sqrt", {imp.op("shift", {var}, {{"offset", eps}}).name});
  Value y = imp.op("div", {centered.name, sd.name});
  y = imp.op("mul", {y.name, scale});
  imp.out(0, imp.op("add", {y.name, bias}));
}

// ---- shapes and data movement ----

void convert_shape(I& imp) {
  const Value& v = imp.in(0);
  std::vector<SymExpr> d;
  if (v.kind == VKind::runtime) {
    d = imp.dims(v.name);
  } else {
    for (int64_t s : folded_shape(v)) d.emplace_back(s);
  }
  auto n = static_cast<int64_t>(d.size());
  int64_t start = imp.attr_int("start", 0), end = imp.attr_int("end", n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  imp.out(0, dims_value(std::vector<SymExpr>(d.begin() + start, d.begin() + end), false));
}

void convert_reshape(I& imp) {
  const Value& v = imp.in(0);
  auto target = imp.ints_input(1, "shape");
  bool allowzero = imp.attr_int("allowzero", 0) != 0;
  std::vector<SymExpr> in = v.kind == VKind::runtime ? imp.dims(v.name) : syms(folded_shape(v));
  std::vector<SymExpr> out(target.size());
  int infer = -1;
  std::vector<SymExpr> num = in, den;
  for (size_t i = 0; i < target.size(); ++i) {
    auto c = target[i].as_constant();
    if (c == -1) {
      if (infer >= 0) imp.fail("the shape has more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    if (c == 0 && !allowzero) {
      if (i >= in.size())
        imp.fail(fmt::format("shape entry {} is 0 but the input has rank {}", i, in.size()));
      out[i] = in[i];
    } else {
      if (c && *c < 0) imp.fail(fmt::format("shape entry {} is {}", i, *c));
      out[i] = target[i];
    }
    // Cancel equal factors so the -1 stays a simple expression (floordiv(b * n * 64, b * n)).
    auto it = std::find(num.begin(), num.end(), out[i]);
    if (it != num.end())
      num.erase(it);
    else
      den.push_back(out[i]);
  }
  if (infer >= 0) {
    SymExpr n = product(num, 0, num.size()), dd = product(den, 0, den.size());
    if (dd == SymExpr(0)) imp.fail("cannot infer a -1 next to a 0 dim");
    out[static_cast<size_t>(infer)] = dd == SymExpr(1) ? n : floordiv(n, dd);
  }
  imp.out(0, reshape_value(imp, v, out));
}

void convert_flatten(I& imp) {
  const Value& v = imp.in(0);
  std::vector<SymExpr> d = v.kind == VKind::runtime ? imp.dims(v.name) : syms(folded_shape(v));
  int r = static_cast<int>(d.size());
  int64_t a = imp.attr_int("axis", 1);
  if (a < -r || a > r) imp.fail(fmt::format("axis {} is out of range for rank {}", a, r));
  if (a < 0) a += r;
  auto ua = static_cast<size_t>(a);
  imp.out(0, reshape_value(imp, v, {product(d, 0, ua), product(d, ua, d.size())}));
}

// Unsqueeze and Squeeze: axes from the attribute (before opset 13) or the second input.
std::optional<std::vector<int64_t>> axes_of(I& imp) {
  if (imp.opset() >= 13) {
    if (!imp.has_input(1)) return std::nullopt;
    return imp.const_ints_input(1, "axes");
  }
  return imp.attr_ints("axes");
}

void convert_unsqueeze(I& imp) {
  const Value& v = imp.in(0);
  std::vector<SymExpr> d = v.kind == VKind::runtime ? imp.dims(v.name) : syms(folded_shape(v));
  auto axes = axes_of(imp);
  if (!axes) imp.fail("Unsqueeze needs axes");
  int r = static_cast<int>(d.size() + axes->size());
  std::set<int64_t> at;
  for (int64_t a : *axes) at.insert(imp.axis(a, r));
  if (at.size() != axes->size()) imp.fail("Unsqueeze axes repeat");
  std::vector<SymExpr> out;
  size_t k = 0;
  for (int i = 0; i < r; ++i) out.push_back(at.count(i) ? SymExpr(1) : d[k++]);
  imp.out(0, reshape_value(imp, v, out));
}

void convert_squeeze(I& imp) {
  const Value& v = imp.in(0);
  std::vector<SymExpr> d = v.kind == VKind::runtime ? imp.dims(v.name) : syms(folded_shape(v));
  int r = static_cast<int>(d.size());
  auto axes = axes_of(imp);
  std::set<int64_t> drop;
  if (axes && !axes->empty()) {
    for (int64_t a : *axes) drop.insert(imp.axis(a, r));
  } else {
    for (int i = 0; i < r; ++i)
      if (d[static_cast<size_t>(i)] == SymExpr(1)) drop.insert(i);
  }
  std::vector<SymExpr> out;
  for (int i = 0; i < r; ++i) {
    if (!drop.count(i))
      out.push_back(d[static_cast<size_t>(i)]);
    else if (!(d[static_cast<size_t>(i)] == SymExpr(1)))
      imp.fail(fmt::format("cannot squeeze dim {} of size {}", i, d[static_cast<size_t>(i)].str()));
  }
  imp.out(0, reshape_value(imp, v, out));
}

void convert_transpose(I& imp) {
  std::string x = imp.rt(0);
  int r = imp.rank(x);
  auto perm = imp.attr_ints("perm");
  std::vector<SymExpr> p;
  if (perm) {
    for (int64_t a : *perm) p.emplace_back(a);
  } else {
    for (int i = r - 1; i >= 0; --i) p.emplace_back(i);
  }
  imp.out(0, imp.op("permute", {x}, {{"perm", p}}));
}

void convert_concat(I& imp) {
  int n = imp.num_inputs();
  bool folded = true;
  std::vector<SymExpr> all;
  for (int i = 0; i < n && folded; ++i) {
    const Value& v = imp.in(i);
    auto ints = imp.ints_of(v);
    folded =
        ints && folded_shape(v).size() == 1 && (v.kind == VKind::dims || is_integer_type(v.elem));
    if (folded) all.insert(all.end(), ints->begin(), ints->end());
  }
  if (folded) {
    imp.out(0, dims_value(all, false));
    return;
  }
  std::vector<std::string> args;
  for (int i = 0; i < n; ++i) {
    std::string a = imp.rt(i);
    // Empty operands (a dim of 0) add nothing.
    auto d = imp.dims(a);
    bool empty = false;
    for (const SymExpr& s : d) empty = empty || s == SymExpr(0);
    if (!empty) args.push_back(a);
  }
  if (args.empty()) imp.fail("Concat of empty tensors only");
  int64_t a = imp.axis(imp.attr_int("axis", 0), imp.rank(args[0]));
  if (args.size() == 1) {
    Value only;
    only.name = args[0];
    only.type = imp.type_of(args[0]);
    imp.out(0, only);
    return;
  }
  imp.out(0, imp.op("concat", args, dim_attr(a)));
}

void convert_split(I& imp) {
  std::string x = imp.rt(0);
  int r = imp.rank(x);
  int64_t a = imp.axis(imp.attr_int("axis", 0), r);
  auto d = imp.dims(x);
  SymExpr len = d[static_cast<size_t>(a)];
  int outs = imp.node().output_size();
  std::vector<SymExpr> sizes;
  if (imp.opset() >= 13 && imp.has_input(1)) {
    sizes = imp.ints_input(1, "split");
  } else if (auto s = imp.attr_ints("split"); imp.opset() < 13 && s) {
    sizes = syms(*s);
  }
  if (sizes.empty()) {
    int64_t parts = imp.attr_int("num_outputs", outs);
    if (parts < 1 || parts > 64) imp.fail(fmt::format("cannot split into {} parts", parts));
    auto c = len.as_constant();
    if (c && *c % parts != 0) {  // opset 18: the last part is smaller
      int64_t each = (*c + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i) sizes.emplace_back(std::min(each, *c - i * each));
    } else {
      Value t = imp.op("split", {x}, {{"dim", SymExpr(a)}, {"parts", SymExpr(parts)}});
      for (int i = 0; i < outs; ++i)
        imp.out(i, imp.emit(CallKind::item, "", {t.name}, {{"index", SymExpr(i)}}));
      return;
    }
  }
  if (static_cast<int>(sizes.size()) != outs)
    imp.fail(fmt::format("{} split sizes for {} outputs", sizes.size(), outs));
  SymExpr start(0);
  for (int i = 0; i < outs; ++i) {
    imp.out(
        i,
        imp.op("slice", {x},
               {{"dim", SymExpr(a)}, {"start", start}, {"size", sizes[static_cast<size_t>(i)]}}));
    start = start + sizes[static_cast<size_t>(i)];
  }
}

// One axis of Slice: start and end normalized against the dim `d` (clamped where d is known).
std::pair<SymExpr, SymExpr> slice_range(const SymExpr& s0, const SymExpr& e0, const SymExpr& d) {
  constexpr int64_t kBig = int64_t{1} << 40;
  auto norm = [&](const SymExpr& v) -> SymExpr {
    auto c = v.as_constant();
    if (!c) return v;
    if (*c >= kBig) return d;
    if (*c <= -kBig) return SymExpr(0);
    SymExpr out = *c < 0 ? d + v : v;
    if (auto dc = d.as_constant()) {
      int64_t o = *out.as_constant();
      return SymExpr(std::clamp<int64_t>(o, 0, *dc));
    }
    return out;
  };
  SymExpr s = norm(s0), e = norm(e0);
  if (auto sc = s.as_constant(), ec = e.as_constant(); sc && ec && *ec < *sc) e = s;
  return {s, e};
}

void convert_slice(I& imp) {
  const Value& v = imp.in(0);
  std::vector<SymExpr> starts, ends;
  std::vector<int64_t> axes, steps;
  if (imp.opset() < 10) {
    starts = syms(imp.attr_ints("starts").value_or(std::vector<int64_t>{}));
    ends = syms(imp.attr_ints("ends").value_or(std::vector<int64_t>{}));
    if (auto a = imp.attr_ints("axes")) axes = *a;
  } else {
    starts = imp.ints_input(1, "starts");
    ends = imp.ints_input(2, "ends");
    if (imp.has_input(3)) axes = imp.const_ints_input(3, "axes");
    if (imp.has_input(4)) steps = imp.const_ints_input(4, "steps");
  }
  if (starts.size() != ends.size()) imp.fail("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    imp.fail("starts, ends, axes and steps differ in length");
  // A shape vector is sliced now (Shape -> Slice chains) when its bounds are known; otherwise
  // (positions 0..seq of a constant table, say) it is sliced at run time below.
  if (v.kind != VKind::runtime && folded_shape(v).size() == 1 && imp.ints_of(v) &&
      starts.size() == 1 && steps[0] == 1) {
    auto vals = *imp.ints_of(v);
    auto n = static_cast<int64_t>(vals.size());
    auto [s, e] = slice_range(starts[0], ends[0], SymExpr(n));
    auto sc = s.as_constant(), ec = e.as_constant();
    if (sc && ec) {
      imp.out(0, dims_value(std::vector<SymExpr>(vals.begin() + *sc, vals.begin() + *ec), false));
      return;
    }
  }
  std::string x = imp.runtime(v).first;
  int r = imp.rank(x);
  if (std::any_of(steps.begin(), steps.end(), [](int64_t st) { return st != 1; })) {
    if (std::find(steps.begin(), steps.end(), 0) != steps.end()) imp.fail("a Slice step of 0");
    imp.out(
        0,
        imp.op("slice_steps", {x},
               {{"starts", starts}, {"ends", ends}, {"axes", syms(axes)}, {"steps", syms(steps)}}));
    return;
  }
  std::string cur = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = imp.axis(axes[i], r);
    SymExpr d = imp.dims(cur)[static_cast<size_t>(a)];
    auto [s, e] = slice_range(starts[i], ends[i], d);
    if (s == SymExpr(0) && e == d) continue;
    cur = imp.op("slice", {cur}, {{"dim", SymExpr(a)}, {"start", s}, {"size", e - s}}).name;
  }
  Value out;
  out.kind = VKind::runtime;
  out.name = cur;
  out.type = imp.type_of(cur);
  imp.out(0, out);
}

void convert_gather(I& imp) {
  const Value& data = imp.in(0);
  const Value& idx = imp.in(1);
  auto idx_ints = imp.ints_of(idx);
  // Gathering from a shape vector (Shape -> Gather) folds.
  if (data.kind != VKind::runtime && folded_shape(data).size() == 1 && imp.ints_of(data) &&
      idx_ints && folded_shape(idx).size() <= 1) {
    auto vals = *imp.ints_of(data);
    std::vector<SymExpr> out;
    for (const SymExpr& i : *idx_ints) {
      auto c = i.as_constant();
      auto n = static_cast<int64_t>(vals.size());
      if (!c || *c < -n || *c >= n)
        imp.fail(fmt::format("index {} out of range for {} values", i.str(), n));
      out.push_back(vals[static_cast<size_t>(*c < 0 ? *c + n : *c)]);
    }
    imp.out(0, dims_value(out, folded_shape(idx).empty()));
    return;
  }
  std::string x = imp.runtime(data).first;
  int r = imp.rank(x);
  int64_t a = imp.axis(imp.attr_int("axis", 0), r);
  auto d = imp.dims(x);
  // A constant scalar index is a slice of size 1 with the dim dropped.
  if (idx.kind == VKind::constant && idx.data.shape.empty() && idx_ints) {
    SymExpr i = (*idx_ints)[0];
    if (auto c = i.as_constant(); c && *c < 0) i = d[static_cast<size_t>(a)] + i;
    Value s = imp.op("slice", {x}, {{"dim", SymExpr(a)}, {"start", i}, {"size", SymExpr(1)}});
    d.erase(d.begin() + a);
    imp.out(0, imp.op("reshape", {s.name}, {{"shape", d}}));
    return;
  }
  std::string ids = imp.runtime(idx).first;
  imp.out(0, imp.op("gather", {x, ids}, {{"axis", SymExpr(a)}}));
}

void convert_cast(I& imp) {
  const Value& v = imp.in(0);
  auto to = static_cast<int>(imp.attr_int("to", TensorProto::FLOAT));
  bool to_int = is_integer_type(to);
  if (v.kind == VKind::constant) {
    Value c = v;
    c.name.clear();
    c.elem = to;
    for (double& x : c.data.data) {
      if (to == TensorProto::BOOL)
        x = x != 0;
      else if (to_int)
        x = std::trunc(x);
      else if (to == TensorProto::FLOAT)
        x = static_cast<float>(x);
      else if (to == TensorProto::FLOAT16)
        x = round_to_dtype(static_cast<float>(x), DType::f16);
      else if (to == TensorProto::BFLOAT16)
        x = round_to_dtype(static_cast<float>(x), DType::bf16);
    }
    imp.out(0, c);
    return;
  }
  if (v.kind == VKind::dims) {
    imp.out(0, v);  // shape arithmetic stays integral
    return;
  }
  if (to == TensorProto::FLOAT16 || to == TensorProto::BFLOAT16) {
    // Imported models compute in f32 (docs/onnx.md): the values round to the narrower type,
    // then travel as f32 again, so every operator after it sees one dtype.
    const Value narrow = imp.op("cast", {v.name}, {{"to", SymExpr(to)}});
    imp.out(0, imp.op("cast", {narrow.name}, {{"to", SymExpr(int64_t{TensorProto::FLOAT})}}));
    return;
  }
  if (!to_int) {  // every run-time tensor is float in weft (docs/onnx.md)
    imp.out(0, v);
    return;
  }
  imp.out(0, imp.op("cast", {v.name}, {{"to", SymExpr(to)}}));
}

void convert_where(I& imp) {
  int r = broadcast_rank(imp, {&imp.in(0), &imp.in(1), &imp.in(2)});
  std::string c = imp.runtime(with_rank(imp.in(0), r)).first,
              a = imp.runtime(with_rank(imp.in(1), r)).first,
              b = imp.runtime(with_rank(imp.in(2), r)).first;
  imp.out(0, imp.op("where", {imp.to_rank(c, r), imp.to_rank(a, r), imp.to_rank(b, r)}));
}

void convert_expand(I& imp) {
  auto shape = imp.ints_input(1, "shape");
  std::string x = imp.rt(0);
  int r = std::max(imp.rank(x), static_cast<int>(shape.size()));
  x = imp.to_rank(x, r);
  shape.insert(shape.begin(), static_cast<size_t>(r) - shape.size(), SymExpr(1));
  auto d = imp.dims(x);
  for (int i = 0; i < r; ++i) {
    const SymExpr& want = shape[static_cast<size_t>(i)];
    if (d[static_cast<size_t>(i)] == SymExpr(1) && !(want == SymExpr(1)))
      x = imp.op("repeat", {x}, {{"dim", SymExpr(i)}, {"times", want}}).name;
  }
  Value out;
  out.kind = VKind::runtime;
  out.name = x;
  out.type = imp.type_of(x);
  imp.out(0, out);
}

void convert_tile(I& imp) {
  std::string x = imp.rt(0);
  auto reps = imp.ints_input(1, "repeats");
  if (static_cast<int>(reps.size()) != imp.rank(x))
    imp.fail(fmt::format("{} repeats for a tensor of rank {}", reps.size(), imp.rank(x)));
  for (size_t i = 0; i < reps.size(); ++i)
    if (!(reps[i] == SymExpr(1)))
      x = imp.op("repeat", {x}, {{"dim", SymExpr(static_cast<int64_t>(i))}, {"times", reps[i]}})
              .name;
  Value out;
  out.name = x;
  out.type = imp.type_of(x);
  imp.out(0, out);
}

void convert_range(I& imp) {
  std::vector<SymExpr> v[3];
  for (int i = 0; i < 3; ++i) {
    auto ints = imp.ints_of(imp.in(i));
    if (!ints || ints->size() != 1)
      imp.fail(fmt::format("Range input {} must be a known integer scalar", i));
    v[i] = *ints;
  }
  auto start = v[0][0].as_constant(), limit = v[1][0].as_constant(), delta = v[2][0].as_constant();
  if (!start || !delta || *delta == 0)
    imp.fail("Range needs a constant start and a nonzero constant delta");
  if (limit) {
    std::vector<SymExpr> out;
    for (int64_t x = *start; *delta > 0 ? x < *limit : x > *limit; x += *delta) {
      out.emplace_back(x);
      if (out.size() > (size_t{1} << 20)) imp.fail("a Range too long to fold");
    }
    Value c = dims_value(out, false);
    if (c.kind == VKind::constant)
      c.elem = imp.in(0).kind == VKind::constant ? imp.in(0).elem : TensorProto::INT64;
    imp.out(0, c);
    return;
  }
  imp.out(0, imp.op("range", {}, {{"start", v[0][0]}, {"limit", v[1][0]}, {"delta", v[2][0]}}));
}

void convert_pad(I& imp) {
  std::string mode = imp.attr_string("mode", "constant");
  if (mode != "constant") imp.fail(fmt::format("Pad mode '{}' (constant only)", mode));
  std::string x = imp.rt(0);
  std::vector<SymExpr> pads;
  double value = 0;
  if (imp.opset() < 11) {
    pads = syms(imp.attr_ints("pads").value_or(std::vector<int64_t>{}));
    value = imp.attr_float("value", 0.0);
  } else {
    pads = imp.ints_input(1, "pads");
    if (imp.has_input(2)) {
      const Value& c = imp.in(2);
      if (c.kind != VKind::constant || c.data.numel() != 1)
        imp.fail("Pad's constant_value must be a known scalar");
      value = c.data.data[0];
    }
    if (imp.has_input(3)) imp.fail("Pad with axes is not supported");
  }
  imp.out(0, imp.op("pad", {x},
                    {{"pads", pads}, {"value", rational_attr(imp, value, "the pad value")}}));
}

// A Constant node's or ConstantOfShape's tensor attribute.
Value tensor_attr(const AttributeProto& a) {
  return constant_value(tensor_from_proto(a.t(), SourceLoc{}, "the tensor attribute"),
                        a.t().data_type());
}

void convert_constant(I& imp) {
  const AttributeProto* a = nullptr;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"})
    if ((a = imp.attr(name))) break;
  if (!a) imp.fail("Constant without a value, value_float(s) or value_int(s) attribute");
  if (a->name() == "value") {
    try {
      imp.out(0, tensor_attr(*a));
    } catch (const UserError& e) {
      imp.fail(e.message());
    }
  } else if (a->name() == "value_float") {
    imp.out(0, constant_value(Tensor<double>(Shape{}, a->f()), TensorProto::FLOAT));
  } else if (a->name() == "value_floats") {
    std::vector<double> v(a->floats().begin(), a->floats().end());
    imp.out(0, constant_value(Tensor<double>(Shape{static_cast<int64_t>(v.size())}, v),
                              TensorProto::FLOAT));
  } else if (a->name() == "value_int") {
    imp.out(0, constant_value(Tensor<double>(Shape{}, static_cast<double>(a->i())),
                              TensorProto::INT64));
  } else {
    std::vector<double> v(a->ints().begin(), a->ints().end());
    imp.out(0, constant_value(Tensor<double>(Shape{static_cast<int64_t>(v.size())}, v),
                              TensorProto::INT64));
  }
}

void convert_constant_of_shape(I& imp) {
  auto shape = imp.ints_input(0, "shape");
  double fill = 0;
  int elem = TensorProto::FLOAT;
  if (const AttributeProto* a = imp.attr("value")) {
    Value t;
    try {
      t = tensor_attr(*a);
    } catch (const UserError& e) {
      imp.fail(e.message());
    }
    if (t.data.numel() != 1) imp.fail("ConstantOfShape's value must hold one element");
    fill = t.data.data[0];
    elem = t.elem;
  }
  bool all_const =
      std::all_of(shape.begin(), shape.end(), [](const SymExpr& s) { return s.is_constant(); });
  if (all_const) {
    // Small ones fold (shapes and axes are made this way); large ones, such as the weights of
    // ONNX's "light" models, are filled at run time rather than held by the import.
    auto s = const_shape_of(imp, shape);
    int64_t n = 1;
    bool small = true;
    for (int64_t d : s) {
      if (d < 0) check_foldable(imp, s);  // names the bad shape
      if (d > 0 && n > (int64_t{1} << 16) / d) small = false;
      n *= small ? d : 1;
    }
    if (small) {
      imp.out(0, constant_value(Tensor<double>(s, fill), elem));
      return;
    }
  }
  auto r = rational_of(fill);
  if (!r) imp.fail("ConstantOfShape's value must be finite");
  imp.out(0, imp.op("fill", {}, {{"shape", shape}, {"value", *r}}));
}

void convert_identity(I& imp) {
  imp.only_outputs(1);
  imp.out(0, imp.in(0));
}

void convert_dropout(I& imp) {
  imp.only_outputs(2);
  // Opset 12 on: training_mode is an input; weft runs inference only.
  if (imp.has_input(2)) {
    auto t = imp.ints_of(imp.in(2));
    if (!t || t->empty() || !(t->at(0) == SymExpr(0)))
      imp.fail("training_mode must be a constant false (weft runs inference only)");
  }
  imp.out(0, imp.in(0));
  // The mask of an inference run keeps every element.
  if (imp.node().output_size() > 1 && !imp.node().output(1).empty()) {
    const Value& x = imp.in(0);
    std::vector<SymExpr> d = x.kind == VKind::runtime ? imp.dims(x.name) : syms(folded_shape(x));
    Shape shape = const_shape_of(imp, d);
    check_foldable(imp, shape);
    imp.out(1, constant_value(Tensor<double>(shape, 1.0), TensorProto::BOOL));
  }
}

void convert_gelu(I& imp) {
  std::string approx = imp.attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") imp.fail(fmt::format("approximate='{}'", approx));
  unary(imp, approx == "tanh" ? "gelu_tanh" : "gelu");
}

// ---- convolutional networks ----

// kernel/strides/pads/dilations of a Conv or pool node for `n` spatial dims, auto_pad resolved
// against the input's spatial dims.
MAttrs window_attrs(I& imp, const std::vector<SymExpr>& xd, const std::vector<int64_t>& kernel) {
  size_t n = kernel.size();
  if (n + 2 != xd.size())
    imp.fail(fmt::format("a kernel of {} dims for an input of rank {}", n, xd.size()));
  auto strides = imp.attr_ints("strides").value_or(std::vector<int64_t>(n, 1));
  auto dil = imp.attr_ints("dilations").value_or(std::vector<int64_t>(n, 1));
  auto pads = imp.attr_ints("pads").value_or(std::vector<int64_t>(2 * n, 0));
  if (strides.size() != n || dil.size() != n || pads.size() != 2 * n)
    imp.fail("strides, dilations and pads must match the kernel's spatial rank");
  std::string auto_pad = imp.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    pads.assign(2 * n, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      auto in = xd[2 + i].as_constant();
      if (!in) imp.fail("auto_pad SAME_* needs constant spatial dims");
      int64_t out = (*in + strides[i] - 1) / strides[i];
      int64_t total =
          std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - *in);
      int64_t small = total / 2, big = total - small;
      pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      pads[i + n] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    imp.fail(fmt::format("auto_pad '{}'", auto_pad));
  }
  return {{"strides", syms(strides)}, {"pads", syms(pads)}, {"dilations", syms(dil)}};
}

void convert_conv(I& imp) {
  std::string x = imp.rt(0), w = imp.rt(1);
  auto xd = imp.dims(x), wd = imp.dims(w);
  if (xd.size() < 3 || wd.size() != xd.size())
    imp.fail("Conv needs x [N, C, ...] and w of the same rank");
  std::vector<int64_t> kernel = imp.attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
  if (kernel.empty()) kernel = const_shape_of(imp, std::vector<SymExpr>(wd.begin() + 2, wd.end()));
  MAttrs attrs = window_attrs(imp, xd, kernel);
  attrs["group"] = SymExpr(imp.attr_int("group", 1));
  Value y = imp.op("conv", {x, w}, attrs);
  if (imp.has_input(2)) {
    std::vector<SymExpr> shape(xd.size(), SymExpr(1));
    shape[1] = wd[0];
    std::string b = imp.runtime(reshape_value(imp, imp.in(2), shape)).first;
    y = imp.op("add", {y.name, b});
  }
  imp.out(0, y);
}

void convert_pool(I& imp, const char* op) {
  imp.only_outputs(std::string(op) == "max_pool" ? 2 : 1);
  std::string x = imp.rt(0);
  auto kernel = imp.attr_ints("kernel_shape");
  if (!kernel) imp.fail("pooling needs kernel_shape");
  MAttrs attrs = window_attrs(imp, imp.dims(x), *kernel);
  attrs["kernel"] = syms(*kernel);
  attrs["ceil_mode"] = SymExpr(imp.attr_int("ceil_mode", 0));
  if (std::string(op) == "avg_pool")
    attrs["count_include_pad"] = SymExpr(imp.attr_int("count_include_pad", 0));
  else if (imp.attr_int("storage_order", 0))
    imp.fail("storage_order=1 is not supported");
  imp.out(0, imp.op(op, {x}, attrs));
  if (imp.node().output_size() > 1 && !imp.node().output(1).empty()) {
    attrs.erase("count_include_pad");
    imp.out(1, imp.op("max_pool_indices", {x}, attrs));
  }
}

void convert_lrn(I& imp) {
  std::string x = imp.rt(0);
  imp.out(0, imp.op("lrn", {x},
                    {{"size", SymExpr(imp.attr_int("size", 1))},
                     {"alpha", rational_attr(imp, imp.attr_float("alpha", 1e-4), "alpha")},
                     {"beta", rational_attr(imp, imp.attr_float("beta", 0.75), "beta")},
                     {"bias", rational_attr(imp, imp.attr_float("bias", 1.0), "bias")}}));
}

}  // namespace

const std::vector<Converter>& converters() {
  static const std::vector<Converter> table = {
      // clang-format off
      {"Add", 7, kMaxOpset, convert_arith<Arith::add>},
      {"Sub", 7, kMaxOpset, convert_arith<Arith::sub>},
      {"Mul", 7, kMaxOpset, convert_arith<Arith::mul>},
      {"Div", 7, kMaxOpset, convert_arith<Arith::div>},
      {"Pow", 7, kMaxOpset, convert_arith<Arith::pow>},
      {"Sum", 8, kMaxOpset, convert_sum},
      {"Clip", 6, kMaxOpset, convert_clip},
      {"Abs", 6, kMaxOpset, convert_abs},
      {"LeakyRelu", 6, kMaxOpset, convert_leaky_relu},
      {"Reciprocal", 6, kMaxOpset, convert_reciprocal},
      {"Sqrt", 6, kMaxOpset, [](I& i) { unary(i, "sqrt"); }},
      {"Exp", 6, kMaxOpset, [](I& i) { unary(i, "exp"); }},
      {"Relu", 6, kMaxOpset, [](I& i) { unary(i, "relu"); }},
      {"Tanh", 6, kMaxOpset, [](I& i) { unary(i, "tanh"); }},
      {"Sigmoid", 6, kMaxOpset, [](I& i) { unary(i, "sigmoid"); }},
      {"Neg", 6, kMaxOpset, [](I& i) { unary(i, "neg"); }},
      {"Erf", 9, kMaxOpset, [](I& i) { unary(i, "erf"); }},
      {"Gelu", 20, kMaxOpset, convert_gelu},
      {"MatMul", 1, kMaxOpset, convert_matmul},
      {"Gemm", 7, kMaxOpset, convert_gemm},
      {"Softmax", 1, kMaxOpset, convert_softmax},
      {"LayerNormalization", 17, kMaxOpset, convert_layer_norm},
      {"ReduceMean", 1, kMaxOpset, [](I& i) { convert_reduce<18>(i, "mean"); }},
      {"ReduceMax", 1, kMaxOpset, [](I& i) { convert_reduce<18>(i, "max"); }},
      {"ReduceSum", 1, kMaxOpset, [](I& i) { convert_reduce<13>(i, "sum"); }},
      {"ReduceSumSquare", 1, kMaxOpset, [](I& i) { convert_reduce<18>(i, "sum", true); }},
      {"ReduceLogSum", 1, kMaxOpset, [](I& i) { convert_reduce<18>(i, "sum", false, true); }},
      {"ReduceLogSumExp", 1, kMaxOpset, [](I& i) { convert_reduce<18>(i, "logsumexp"); }},
      {"LogSoftmax", 1, kMaxOpset, convert_log_softmax},
      {"Reshape", 5, kMaxOpset, convert_reshape},
      {"Flatten", 1, kMaxOpset, convert_flatten},
      {"Transpose", 1, kMaxOpset, convert_transpose},
      {"Concat", 4, kMaxOpset, convert_concat},
      {"Split", 2, kMaxOpset, convert_split},
      {"Slice", 1, kMaxOpset, convert_slice},
      {"Gather", 1, kMaxOpset, convert_gather},
      {"Unsqueeze", 1, kMaxOpset, convert_unsqueeze},
      {"Squeeze", 1, kMaxOpset, convert_squeeze},
      {"Cast", 6, kMaxOpset, convert_cast},
      {"Where", 9, kMaxOpset, convert_where},
      {"Expand", 8, kMaxOpset, convert_expand},
      {"Shape", 1, kMaxOpset, convert_shape},
      {"ConstantOfShape", 9, kMaxOpset, convert_constant_of_shape},
      {"Constant", 1, kMaxOpset, convert_constant},
      {"Identity", 1, kMaxOpset, convert_identity},
      {"Dropout", 1, kMaxOpset, convert_dropout},
      {"Conv", 1, kMaxOpset, convert_conv},
      {"MaxPool", 1, kMaxOpset, [](I& i) { convert_pool(i, "max_pool"); }},
      {"AveragePool", 1, kMaxOpset, [](I& i) { convert_pool(i, "avg_pool"); }},
      {"GlobalAveragePool", 1, kMaxOpset, [](I& i) { unary(i, "global_avg_pool"); }},
      {"GlobalMaxPool", 1, kMaxOpset, [](I& i) { unary(i, "global_max_pool"); }},
      {"BatchNormalization", 1, kMaxOpset, convert_batch_norm},
      {"LRN", 1, kMaxOpset, convert_lrn},
      {"Tile", 6, kMaxOpset, convert_tile},
      {"Range", 11, kMaxOpset, convert_range},
      {"Pad", 2, kMaxOpset, convert_pad},
      {"Log", 6, kMaxOpset, [](I& i) { unary(i, "log"); }},
      // clang-format on
  };
  return table;
}

}  // namespace weft::onnx_import
#endif
