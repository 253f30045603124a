// The helpers every ONNX converter shares: constant folding with numpy broadcasting, reshapes of
// any kind of value, and elementwise arithmetic on run-time, constant and shape values.
#ifdef WEFT_HAVE_ONNX
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <tuple>

#include "core/dtype_convert.h"
#include "model/model_ops.h"
#include "onnx/convert_common.h"

namespace weft::onnx_import {

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
void check_foldable(const I& imp, const Shape& shape, int64_t limit) {
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

// Numpy broadcasting aligns ranks by prepending size-1 dims: done on a constant's data (and a
// 0-d shape value's), since the table's reshape (to_rank) cannot take a 0-d operand.
Value with_rank(Value v, int r) {
  // A 0-d shape value (a dim read with Shape -> Gather) becomes a 1-element vector, which
  // to_rank can reshape once it is a run-time tensor.
  if (v.kind == VKind::dims && v.scalar && r >= 1) v.scalar = false;
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
Value arith(I& imp, Arith k, const Value& a_in, const Value& b_in) {
  const char* names[] = {"add", "sub", "mul", "div", "pow"};
  const char* name = names[static_cast<int>(k)];
  // A shape vector cast to a float type computes as a run-time tensor of that type: folding it
  // would divide as integers do.
  auto numeric = [&](const Value& v) {
    if (v.kind != VKind::dims || is_integer_type(v.elem)) return v;
    Value r;
    std::tie(r.name, r.type) = imp.runtime(v);
    r.elem = v.elem;
    return r;
  };
  const Value a = numeric(a_in), b = numeric(b_in);
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
  // One run-time operand and a constant scalar: scale / shift / sqr / a cube / sqrt.
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
            // GELU's tanh form cubes: as a product it fuses with its neighbours, where a
            // `pow` row stays outside every µGraph region (onnxruntime computes x*x*x too).
            if (*c == 3) return imp.op("mul", {imp.op("sqr", {a.name}).name, a.name});
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
  // An integer quotient truncates toward zero (ONNX's Div) as the integer dtype stores it.
  Value out = imp.op(name, {x, y});
  out.elem = a.kind == VKind::runtime ? a.elem : b.elem;
  return out;
}

}  // namespace weft::onnx_import
#endif
