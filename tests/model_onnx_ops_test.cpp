// The model operators for ONNX (model/model_ops_onnx.cpp): CPU semantics at hand-checked points
// (the ONNX specification's own examples where it has them), symbolic shape rules, and the
// NumPy reference of tests/model/onnx_ops_reference.py at several bindings.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "exec/vm.h"
#include "model/deduce.h"
#include "model/model_ops.h"
#include "model/parser.h"
#include "model/printer.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

Tensor<double> iota(Shape shape, double first = 1) {
  Tensor<double> t(std::move(shape), 0.0);
  std::iota(t.data.begin(), t.data.end(), first);
  return t;
}

Tensor<double> eval(const char* op, const std::vector<const Tensor<double>*>& in,
                    const Attrs& attrs) {
  OpKind kind = *op_by_name(op);
  Attrs full = attrs;
  for (const AttrSpec& s : op_info(kind).attrs)
    if (!full.has(s.name)) full.set(s.name, s.default_value);
  return model_impl(kind)->eval(in, full);
}

using V = std::vector<double>;

// model_impl() attaches the model layer's implementations to the operator table by kind: exactly
// the model-only rows have one, each with a shape rule and either CPU semantics or an expansion.
TEST(ModelOps, EveryModelOnlyRowHasAnImplementationAndNoOtherRowHasOne) {
  int with = 0;
  for (const OpInfo& info : all_ops()) {
    const ModelOpImpl* impl = model_impl(info.kind);
    EXPECT_EQ(impl != nullptr, is_model_only(info.kind)) << info.name;
    if (!impl) continue;
    ++with;
    EXPECT_NE(impl->infer, nullptr) << info.name;
    EXPECT_NE(impl->eval == nullptr, impl->expand == nullptr) << info.name;
  }
  EXPECT_EQ(with, 50);
  EXPECT_NE(model_impl(OpKind::attention)->expand, nullptr);
  EXPECT_EQ(model_impl(OpKind::matmul), nullptr);
}

TEST(ModelOnnxOps, ConvByHand) {
  Tensor<double> x = iota({1, 1, 3, 3}), w({1, 1, 2, 2}, V{1, 2, 3, 4});
  EXPECT_EQ(eval("conv", {&x, &w}, {}).data, (V{37, 47, 67, 77}));
  Tensor<double> y =
      eval("conv", {&x, &w},
           {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  EXPECT_EQ(y.shape, (Shape{1, 1, 2, 2}));
  EXPECT_EQ(y.data, (V{4, 18, 36, 77}));
  // Two groups of one channel each: each output channel sees only its own input channel.
  Tensor<double> x2 = iota({1, 2, 2, 2}), w2({2, 1, 1, 1}, V{10, -1});
  Tensor<double> g = eval("conv", {&x2, &w2}, {{"group", int64_t{2}}});
  EXPECT_EQ(g.data, (V{10, 20, 30, 40, -5, -6, -7, -8}));
}

// ONNX's maxpool_2d_ceil and averagepool_2d_ceil examples: 4x4, kernel 3, stride 2, ceil_mode.
TEST(ModelOnnxOps, PoolsMatchTheOnnxCeilExamples) {
  Tensor<double> x = iota({1, 1, 4, 4});
  Attrs a = {{"kernel", std::vector<int64_t>{3, 3}},
             {"strides", std::vector<int64_t>{2, 2}},
             {"ceil_mode", int64_t{1}}};
  EXPECT_EQ(eval("max_pool", {&x}, a).data, (V{11, 12, 15, 16}));
  EXPECT_EQ(eval("avg_pool", {&x}, a).data, (V{6, 7.5, 12, 13.5}));
  EXPECT_EQ(eval("max_pool_indices", {&x}, a).data, (V{10, 11, 14, 15}));
  a.set("ceil_mode", int64_t{0});
  EXPECT_EQ(eval("max_pool", {&x}, a).data, (V{11}));
  // Padding never wins a max, even over negative values; with count_include_pad it divides.
  Tensor<double> neg({1, 1, 1, 2}, V{-3, -5});
  Attrs p = {{"kernel", std::vector<int64_t>{1, 2}}, {"pads", std::vector<int64_t>{0, 1, 0, 1}}};
  EXPECT_EQ(eval("max_pool", {&neg}, p).data, (V{-3, -3, -5}));
  EXPECT_EQ(eval("avg_pool", {&neg}, p).data, (V{-3, -4, -5}));
  p.set("count_include_pad", int64_t{1});
  EXPECT_EQ(eval("avg_pool", {&neg}, p).data, (V{-1.5, -4, -2.5}));
}

TEST(ModelOnnxOps, GlobalPoolsAndLrnByHand) {
  Tensor<double> x({1, 3, 1, 2}, V{1, -2, 2, 5, 3, 0});
  Tensor<double> ga = eval("global_avg_pool", {&x}, {}), gm = eval("global_max_pool", {&x}, {});
  EXPECT_EQ(ga.shape, (Shape{1, 3, 1, 1}));
  EXPECT_EQ(ga.data, (V{-0.5, 3.5, 1.5}));
  EXPECT_EQ(gm.data, (V{1, 5, 3}));
  // size 3, alpha / size = 1, beta 1, bias 1: x / (1 + sum of squares of the neighbours).
  Tensor<double> c({1, 3, 1, 1}, V{1, 2, 3});
  Tensor<double> l = eval(
      "lrn", {&c},
      {{"size", int64_t{3}}, {"alpha", Rational(3)}, {"beta", Rational(1)}, {"bias", Rational(1)}});
  EXPECT_DOUBLE_EQ(l.data[0], 1.0 / 6);
  EXPECT_DOUBLE_EQ(l.data[1], 2.0 / 15);
  EXPECT_DOUBLE_EQ(l.data[2], 3.0 / 14);
}

TEST(ModelOnnxOps, GatherByHandAndOutOfRangeIndicesAreErrors) {
  Tensor<double> x = iota({2, 3, 2});
  Tensor<double> ids({2}, V{-1, 0}), scalar(Shape{}, V{2});
  Tensor<double> g = eval("gather", {&x, &ids}, {{"axis", int64_t{1}}});
  EXPECT_EQ(g.shape, (Shape{2, 2, 2}));
  EXPECT_EQ(g.data, (V{5, 6, 1, 2, 11, 12, 7, 8}));
  Tensor<double> s = eval("gather", {&x, &scalar}, {{"axis", int64_t{-2}}});
  EXPECT_EQ(s.shape, (Shape{2, 2}));
  EXPECT_EQ(s.data, (V{5, 6, 11, 12}));
  Tensor<double> bad({3}, V{0, 1, 3});
  try {
    eval("gather", {&x, &bad}, {{"axis", int64_t{1}}});
    ADD_FAILURE() << "index 3 of a dim of 3 was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("gather index 3 (element 2 of the indices) is out of "
                                         "range for dim 1 of extent 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(ModelOnnxOps, SliceStepsExpandAndCastByHand) {
  Tensor<double> x = iota({2, 5}, 0);
  // x[:, 4:0:-2] and x[::-1, -2:]: negative steps, ends beyond the dim clamped.
  Tensor<double> a = eval("slice_steps", {&x},
                          {{"starts", std::vector<int64_t>{4}},
                           {"ends", std::vector<int64_t>{0}},
                           {"axes", std::vector<int64_t>{1}},
                           {"steps", std::vector<int64_t>{-2}}});
  EXPECT_EQ(a.data, (V{4, 2, 9, 7}));
  Tensor<double> b = eval("slice_steps", {&x},
                          {{"starts", std::vector<int64_t>{-1, -2}},
                           {"ends", std::vector<int64_t>{-100, 99}},
                           {"steps", std::vector<int64_t>{-1, 1}}});
  EXPECT_EQ(b.shape, (Shape{2, 2}));
  EXPECT_EQ(b.data, (V{8, 9, 3, 4}));
  // Expand broadcasts both ways: [3, 1] with [2, 1, 4] gives [2, 3, 4].
  Tensor<double> c({3, 1}, V{1, -2, 3});
  Tensor<double> e = eval("expand", {&c}, {{"shape", std::vector<int64_t>{2, 1, 4}}});
  EXPECT_EQ(e.shape, (Shape{2, 3, 4}));
  EXPECT_EQ(e.data[5], -2);
  EXPECT_EQ(e.data[23], 3);
  Tensor<double> v({6}, V{1.0 / 3, -2.7, 200, -1, 70000, std::nan("")});
  auto cast = [&](int64_t to) { return eval("cast", {&v}, {{"to", to}}).data; };
  EXPECT_EQ(cast(10)[0], 0.333251953125);                           // the nearest f16
  EXPECT_EQ(cast(16)[0], 0.333984375);                              // the nearest bf16
  EXPECT_EQ(cast(10)[4], std::numeric_limits<double>::infinity());  // beyond f16's range
  EXPECT_EQ(cast(1)[0], static_cast<double>(1.0f / 3));
  auto i8 = cast(3), u8 = cast(2), i64 = cast(7), bo = cast(9);
  EXPECT_EQ(i8[1], -2);
  EXPECT_EQ(i8[2], -56);  // 200 wraps
  EXPECT_EQ(u8[3], 255);
  EXPECT_EQ(i64[4], 70000);
  EXPECT_EQ(i64[5], 0);  // NaN
  EXPECT_EQ(bo, (V{1, 1, 1, 1, 1, 1}));
}

// Every operator's symbolic shape rule, evaluated at random bindings, equals the shape its CPU
// semantics produce (where the binding passes the rule's run-time checks).
TEST(ModelOnnxOps, SymbolicShapesAgreeWithTheCpuSemanticsAtRandomBindings) {
  SymScope scope;
  SymVar n = scope.declare("n", 1, 16), m = scope.declare("m", 1, 16);
  using L = std::vector<SymExpr>;
  struct Case {
    const char* op;
    std::vector<L> shapes;
    MAttrs attrs;
  };
  const SymExpr big(std::numeric_limits<int64_t>::max());
  std::vector<Case> cases = {
      {"conv",
       {{1, 2, n + 4, m + 4}, {3, 2, 3, 2}},
       {{"strides", L{2, 3}}, {"pads", L{1, 0, 2, 1}}, {"dilations", L{1, 2}}}},
      {"conv", {{1, 4, n + 2}, {4, 2, 3}}, {{"strides", L{2}}, {"group", SymExpr(2)}}},
      {"conv", {{1, 2, n, m, 3}, {1, 2, 1, 1, 1}}, {{"pads", L{0, 1, 0, 0, 2, 1}}}},
      {"max_pool",
       {{1, 1, n + 1, m + 2}},
       {{"kernel", L{2, 3}},
        {"strides", L{2, 2}},
        {"pads", L{1, 1, 1, 0}},
        {"ceil_mode", SymExpr(1)}}},
      {"avg_pool",
       {{1, 1, n + 2, m + 2}},
       {{"kernel", L{3, 2}},
        {"strides", L{3, 2}},
        {"pads", L{0, 1, 2, 1}},
        {"ceil_mode", SymExpr(1)},
        {"count_include_pad", SymExpr(1)}}},
      {"max_pool_indices", {{1, 1, n + 5, m + 5}}, {{"kernel", L{2, 2}}, {"dilations", L{2, 3}}}},
      {"global_max_pool", {{n, 2, m, 3}}, {}},
      {"slice_steps",
       {{n, m, 4}},
       {{"starts", L{-1, 0, 3}},
        {"ends", L{-big, m, 0}},
        {"axes", L{0, 1, 2}},
        {"steps", L{-2, 3, -1}}}},
      {"slice_steps", {{n, m + 1}}, {{"starts", L{1}}, {"ends", L{-1}}, {"axes", L{1}}}},
      {"slice_steps", {{n, m}}, {{"starts", L{SymExpr(0) + n - 1}}, {"ends", L{big}}}},
      {"expand", {{1, m, 1}}, {{"shape", L{n, 1, 1, 3}}}},
      {"gather", {{n, m, 3}, {2, n}}, {{"axis", SymExpr(1)}}},
      {"gather_elements", {{n, m + 2, 3}, {n, m, 2}}, {{"axis", SymExpr(-1)}}},
      {"gather_nd", {{n, m, 3}, {n, 2, 1}}, {{"batch_dims", SymExpr(1)}}},
      {"gather_nd", {{n, 4, m}, {m, 2}}, {}},
      {"equal", {{n, 1}, {1, m}}, {}},
      {"pow", {{n, 1}, {1, m}}, {}},
      {"fill", {}, {{"shape", L{n, m}}}},
      {"dims_tensor", {}, {{"values", L{n, m, 3}}}},
      {"range", {}, {{"start", SymExpr(n)}, {"limit", SymExpr(m)}, {"delta", SymExpr(-2)}}},
      {"range", {}, {{"start", SymExpr(n)}, {"limit", SymExpr(m) * 3}, {"delta", SymExpr(3)}}},
      {"tile", {{n, 2}}, {{"repeats", L{2, m}}}},
      {"pad", {{n, m}}, {{"pads", L{1, -1, 2, 0}}}},
  };
  std::mt19937_64 rng(15);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    const OpInfo& info = op_info(*op_by_name(c.op));
    const ModelOpImpl& impl = *model_impl(info.kind);
    SymProver prover;
    std::vector<SymCondition> checks;
    DeduceContext ctx(prover, {}, &checks);
    std::vector<MType> in;
    for (const L& s : c.shapes) in.push_back(MType::tensor(DType::f32, s));
    MAttrs attrs = c.attrs;
    complete_model_attrs(ctx, info.attrs, info.name, attrs);
    MType out = impl.infer(ctx, in, attrs);
    int tried = 0;
    for (int trial = 0; trial < 30; ++trial) {
      SymBinding b{{"n", static_cast<int64_t>(rng() % 16 + 1)},
                   {"m", static_cast<int64_t>(rng() % 16 + 1)}};
      bool holds = true;
      for (const SymCondition& cond : checks) holds = holds && cond.holds(b);
      if (!holds) continue;
      ++tried;
      std::vector<Tensor<double>> tensors;
      for (const L& s : c.shapes) {
        Shape shape;
        for (const SymExpr& d : s) shape.push_back(evaluate(d, b));
        tensors.emplace_back(shape, 0.0);
      }
      std::vector<const Tensor<double>*> ptrs;
      for (const auto& t : tensors) ptrs.push_back(&t);
      Attrs ta = evaluate_attrs(attrs, b, SourceLoc{});
      Shape want = impl.eval(ptrs, ta).shape, got;
      for (const SymExpr& d : *out.dims) got.push_back(evaluate(d, b));
      EXPECT_EQ(got, want) << binding_str(b) << " " << out.str();
    }
    EXPECT_GT(tried, 10) << "the bindings are too often refused: " << out.str();
  }
}

// The shape rules at symbolic sizes: floor division for strides, min for ceil_mode.
TEST(ModelOnnxOps, SymbolicShapeRules) {
  const char* text = R"(sym 1 <= n <= 8, 3 <= h <= 64
fn main(x: f32[n, 8, h, h], w: f32[16, 4, 3, 3]) -> tuple(f32[ndim=4], f32[ndim=4], f32[ndim=4]) {
  dataflow {
    c = conv(x, w, strides=[2, 3], pads=[1, 1, 1, 1], group=2)
    p = max_pool(x, kernel=[2, 2], strides=[2, 2], ceil_mode=1)
    g = global_avg_pool(x)
    r = tuple(c, p, g)
  }
  return r
}
)";
  SymProver prover;
  Module m = parse_module(text, "shapes.wmod", prover);
  const auto& b = m.functions[0].blocks[0].bindings;
  EXPECT_EQ(b[0].type.str(), "f32[n, 16, floordiv(h + 1, 2), floordiv(h + 2, 3)]");
  EXPECT_EQ(b[2].type.str(), "f32[n, 8, 1, 1]");
  EXPECT_TRUE(parse_module(print_module(m), "again", prover) == m);
  // At every h the symbolic extents equal the ones the CPU semantics produce.
  for (int64_t h : {3, 4, 7, 10}) {
    Tensor<double> x({1, 8, h, h}, 0.5), w({16, 4, 3, 3}, 0.25);
    Tensor<double> c = eval("conv", {&x, &w},
                            {{"strides", std::vector<int64_t>{2, 3}},
                             {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                             {"group", int64_t{2}}});
    EXPECT_EQ(c.shape, (Shape{1, 16, (h - 1) / 2 + 1, (h - 1) / 3 + 1})) << h;
    Tensor<double> p = eval("max_pool", {&x},
                            {{"kernel", std::vector<int64_t>{2, 2}},
                             {"strides", std::vector<int64_t>{2, 2}},
                             {"ceil_mode", int64_t{1}}});
    EXPECT_EQ(p.shape[2], (h + 1) / 2) << h;
  }
}

// Bad attributes and operands are located errors naming the operator.
TEST(ModelOnnxOps, BadShapesAndAttributesAreLocatedErrors) {
  struct Case {
    const char* call;
    const char* message;
  };
  const Case cases[] = {
      {"conv(x, w, group=3)", "conv's input channels to be group * the weight's dim 1"},
      {"conv(x, w, strides=[1])", "conv's strides has 1 entries; 2 spatial dims need 2"},
      {"conv(x, w, pads=[1, 1, -1, 0])", "conv's pads to be >= 0"},
      {"conv(x, w, dilations=[0, 1])", "dilations[0]=0 must be an integer >= 1"},
      {"max_pool(x, kernel=[2])", "max_pool's kernel has 1 entries for 2 spatial dims"},
      {"max_pool(x, kernel=[9, 9])", "max_pool's window (dilation * (kernel - 1) + 1) to fit"},
      {"avg_pool(x, kernel=[2, 2], ceil_mode=2)", "avg_pool's ceil_mode must be 0 or 1"},
      {"global_avg_pool(w2)", "a global pool needs [N, C, *spatial]"},
      {"lrn(x, size=0)", "size=0 must be an integer >= 1"},
      {"pow(x, w2)", "pow's operands have ranks 4 and 2"},
      {"gather(x, w2, axis=4)", "axis=4 is out of range for a tensor of rank 4"},
      {"slice_steps(x, starts=[0], ends=[1, 2])", "slice_steps has 1 starts, 2 ends"},
      {"slice_steps(x, starts=[0], ends=[1], steps=[0])", "steps must be nonzero integers"},
      {"slice_steps(x, starts=[0, 0], ends=[1, 1], axes=[1, -3])", "axes must be distinct"},
      {"expand(x, shape=[3, 1, 1])", "dim 1 of the operands to agree (or one to be 1)"},
      {"cast(x, to=8)", "cast to=8 is not a dtype code weft casts to"},
      {"gather_elements(x, w2, axis=0)", "gather_elements' indices have rank 2, the data rank 4"},
      {"gather_elements(w, x, axis=0)", "gather_elements' indices dim 1 within the data's"},
      {"gather_nd(w2, x)",
       "gather_nd's index length 6 plus batch_dims 0 exceeds the data's rank 2"},
      {"gather_nd(x, w2, batch_dims=2)", "gather_nd needs batch_dims (2) below the ranks"},
      {"equal(x, w2)", "rank"},
  };
  for (const Case& c : cases) {
    std::string text = std::string(
                           "fn main(x: f32[2, 8, 6, 6], w: f32[4, 4, 3, 3], w2: f32[4, 4]) "
                           "-> f32[ndim=4] {\n  dataflow {\n    y = ") +
                       c.call + "\n  }\n  return y\n}\n";
    SymProver prover;
    try {
      parse_module(text, "bad.wmod", prover);
      ADD_FAILURE() << c.call << " was accepted";
    } catch (const UserError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("bad.wmod:3:"), std::string::npos) << what;
      EXPECT_NE(what.find(c.message), std::string::npos) << c.call << ": " << what;
    }
  }
}

}  // namespace
}  // namespace weft
