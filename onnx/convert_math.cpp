// The ONNX converters of elementwise arithmetic and activations, linear algebra, normalization and
// reductions, with their rows of the converter table.
#ifdef WEFT_HAVE_ONNX
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "core/dtype_convert.h"
#include "model/model_ops.h"
#include "onnx/convert_common.h"

namespace weft::onnx_import {
namespace {

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
  imp.out(0, imp.value_of(x));
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

// max(0, min(1, alpha x + beta)): ONNX HardSigmoid, in relu and shifts as Clip is.
std::string hard_sigmoid(I& imp, const std::string& x, double alpha, double beta) {
  std::string z = imp.op("scale", {x}, {{"factor", rational_attr(imp, alpha, "alpha")}}).name;
  z = imp.op("relu", {shifted(imp, z, beta)}).name;
  const std::string d = shifted(imp, imp.op("neg", {z}).name, 1.0);  // 1 - z
  return shifted(imp, imp.op("neg", {imp.op("relu", {d}).name}).name, 1.0);
}

void convert_hard_sigmoid(I& imp) {
  imp.out(0, imp.value_of(hard_sigmoid(imp, imp.rt(0), imp.attr_float("alpha", 0.2f),
                                       imp.attr_float("beta", 0.5f))));
}

// x * HardSigmoid(x; 1/6, 1/2), as MobileNetV3 exports it.
void convert_hard_swish(I& imp) {
  const std::string x = imp.rt(0);
  imp.out(0, imp.op("mul", {x, hard_sigmoid(imp, x, 1.0 / 6, 0.5)}));
}

// relu(x) + slope * min(x, 0), slope broadcast (a per-channel [C, 1, 1] typically).
void convert_prelu(I& imp) {
  const std::string x = imp.rt(0);
  const Value pos = imp.op("relu", {x});
  const Value neg = imp.op("neg", {imp.op("relu", {imp.op("neg", {x}).name}).name});
  imp.out(0, arith(imp, Arith::add, pos, arith(imp, Arith::mul, imp.in(1), neg)));
}

// relu(x) + alpha (exp(min(x, 0)) - 1): ONNX Elu without exp of a large positive x.
void convert_elu(I& imp) {
  const std::string x = imp.rt(0);
  const Value low = imp.op("neg", {imp.op("relu", {imp.op("neg", {x}).name}).name});
  const std::string e = shifted(imp, imp.op("exp", {low.name}).name, -1.0);
  const Value scaled = imp.op(
      "scale", {e}, {{"factor", rational_attr(imp, imp.attr_float("alpha", 1.0f), "alpha")}});
  imp.out(0, imp.op("add", {imp.op("relu", {x}).name, scaled.name}));
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

void convert_gelu(I& imp) {
  std::string approx = imp.attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") imp.fail(fmt::format("approximate='{}'", approx));
  unary(imp, approx == "tanh" ? "gelu_tanh" : "gelu");
}

}  // namespace

// Elementwise, activations, MatMul/Gemm, softmax, normalization and reductions.
void add_math_converters(std::vector<Converter>& table) {
  table.insert(
      table.end(),
      {
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
      {"HardSigmoid", 6, kMaxOpset, convert_hard_sigmoid},
      {"HardSwish", 14, kMaxOpset, convert_hard_swish},
      {"PRelu", 9, kMaxOpset, convert_prelu},
      {"Elu", 6, kMaxOpset, convert_elu},
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
      {"BatchNormalization", 1, kMaxOpset, convert_batch_norm},
      {"Log", 6, kMaxOpset, [](I& i) { unary(i, "log"); }},
          // clang-format on
      });
}

}  // namespace weft::onnx_import
#endif
