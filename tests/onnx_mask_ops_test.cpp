// The operators exporters emit around attention masks, NaN guards, rotary tables and index
// lookups (issue 29): the table rows' values at hand-checked points (NaN and infinity included),
// the gathers' shape rules and errors, their ONNX converters run on the VM, the folding of the
// comparison idioms in shape arithmetic, and ONNX's own node tests of each operator.
#ifdef WEFT_HAVE_ONNX
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>

#include "driver/onnx_run.h"
#include "exec/vm.h"
#include "model/model_ops.h"
#include "model/parser.h"
#include "model/printer.h"
#include "onnx/import.h"
#include "tests/onnx_model_builder.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

using test::ModelBuilder;
using V = std::vector<double>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

double at(const char* op, double x, double y = 0, const Attrs& attrs = {}) {
  const OpInfo& info = op_info(*op_by_name(op));
  Attrs full = attrs;
  for (const AttrSpec& s : info.attrs)
    if (!full.has(s.name)) full.set(s.name, s.default_value);
  return real_value(info, full, x, y);
}

Tensor<double> eval(const char* op, const std::vector<const Tensor<double>*>& in,
                    const Attrs& attrs) {
  OpKind kind = *op_by_name(op);
  Attrs full = attrs;
  for (const AttrSpec& s : op_info(kind).attrs)
    if (!full.has(s.name)) full.set(s.name, s.default_value);
  return model_impl(kind)->eval(in, full);
}

TEST(MaskOps, ComparisonsAndLogicalOperatorsGiveOneOrZero) {
  EXPECT_EQ(at("equal", 2, 2), 1);
  EXPECT_EQ(at("equal", 2, 3), 0);
  EXPECT_EQ(at("less", 2, 3), 1);
  EXPECT_EQ(at("less", 3, 3), 0);
  EXPECT_EQ(at("less_equal", 3, 3), 1);
  EXPECT_EQ(at("greater", 4, 3), 1);
  EXPECT_EQ(at("greater_equal", 2, 3), 0);
  // A NaN operand compares false everywhere (ONNX, IEEE).
  for (const char* op : {"equal", "less", "less_equal", "greater", "greater_equal"}) {
    EXPECT_EQ(at(op, kNaN, 1), 0) << op;
    EXPECT_EQ(at(op, kNaN, kNaN), 0) << op;
  }
  EXPECT_EQ(at("logical_and", 1, 2), 1);
  EXPECT_EQ(at("logical_and", 1, 0), 0);
  EXPECT_EQ(at("logical_or", 0, -3), 1);
  EXPECT_EQ(at("logical_or", 0, 0), 0);
  EXPECT_EQ(at("logical_xor", 1, 1), 0);
  EXPECT_EQ(at("logical_xor", 0, 1), 1);
  EXPECT_EQ(at("logical_not", 0), 1);
  EXPECT_EQ(at("logical_not", 5), 0);
}

TEST(MaskOps, ValueTestsExtremaAndTrigonometry) {
  EXPECT_EQ(at("is_nan", kNaN), 1);
  EXPECT_EQ(at("is_nan", kInf), 0);
  EXPECT_EQ(at("is_inf", kInf), 1);
  EXPECT_EQ(at("is_inf", -kInf), 1);
  EXPECT_EQ(at("is_inf", kNaN), 0);
  EXPECT_EQ(at("is_inf", -kInf, 0, {{"detect_negative", int64_t{0}}}), 0);
  EXPECT_EQ(at("is_inf", kInf, 0, {{"detect_positive", int64_t{0}}}), 0);
  EXPECT_EQ(at("maximum", -1, 2), 2);
  EXPECT_EQ(at("minimum", -1, 2), -1);
  EXPECT_TRUE(std::isnan(at("maximum", kNaN, 2)));  // propagated, as numpy.maximum
  EXPECT_TRUE(std::isnan(at("minimum", 2, kNaN)));
  EXPECT_DOUBLE_EQ(at("cos", 0.5), std::cos(0.5));
  EXPECT_DOUBLE_EQ(at("sin", -2), std::sin(-2.0));
}

// ONNX's GatherElements and GatherND examples (the operator documentation's).
TEST(MaskOps, GathersByHandAndOutOfRangeIndicesAreErrors) {
  Tensor<double> x({2, 2}, V{1, 2, 3, 4}), ids({2, 2}, V{0, 0, 1, 0});
  Tensor<double> g = eval("gather_elements", {&x, &ids}, {{"axis", int64_t{1}}});
  EXPECT_EQ(g.data, (V{1, 1, 4, 3}));
  Tensor<double> x3({3, 3}, V{1, 2, 3, 4, 5, 6, 7, 8, 9}), ids3({2, 3}, V{1, 2, 0, 2, 0, -3});
  Tensor<double> g0 = eval("gather_elements", {&x3, &ids3}, {{"axis", int64_t{0}}});
  EXPECT_EQ(g0.shape, (Shape{2, 3}));
  EXPECT_EQ(g0.data, (V{4, 8, 3, 7, 2, 3}));

  Tensor<double> d({2, 2, 2}, V{0, 1, 2, 3, 4, 5, 6, 7});
  Tensor<double> i1({2, 1, 2}, V{0, 1, 1, 0});  // rows [0, 1] and [1, 0]
  Tensor<double> n1 = eval("gather_nd", {&d, &i1}, {});
  EXPECT_EQ(n1.shape, (Shape{2, 1, 2}));
  EXPECT_EQ(n1.data, (V{2, 3, 4, 5}));
  Tensor<double> i2({2, 1}, V{1, 0});  // batch_dims=1: batch 0 row 1, batch 1 row 0
  Tensor<double> n2 = eval("gather_nd", {&d, &i2}, {{"batch_dims", int64_t{1}}});
  EXPECT_EQ(n2.shape, (Shape{2, 2}));
  EXPECT_EQ(n2.data, (V{2, 3, 4, 5}));

  Tensor<double> bad({2, 2}, V{0, 2, 1, 0});
  try {
    eval("gather_elements", {&x, &bad}, {{"axis", int64_t{1}}});
    ADD_FAILURE() << "index 2 of a dim of 2 was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("gather_elements index 2 (element 1 of the indices) is "
                                         "out of range for dim 1 of extent 2"),
              std::string::npos)
        << e.what();
  }
  Tensor<double> bad_nd({1, 2}, V{0, -3});
  EXPECT_THROW(eval("gather_nd", {&d, &bad_nd}, {}), UserError);
}

// tests/model/mask_ops.wmod: every new row in a model at a symbolic batch deduces, round-trips
// and runs; bad shapes are in ModelOnnxOps.BadShapesAndAttributesAreLocatedErrors.
TEST(MaskOps, AModelOfEveryNewOperatorDeducesRoundTripsAndRuns) {
  SymProver prover;
  Module m = load_module(test::source_path("tests/model/mask_ops.wmod"), prover);
  const auto& b = m.functions[0].blocks[0].bindings;
  EXPECT_EQ(b[0].type.str(), "f32[n, 3, 4]");
  EXPECT_EQ(b[1].type.str(), "f32[n, 5]");
  EXPECT_EQ(b[2].type.str(), "bool[n, 6, 4]");  // less: a comparison
  EXPECT_TRUE(parse_module(print_module(m), "again", prover) == m);
  Tensor<double> x({2, 6, 4}, 0.0), i({2, 3, 4}, 1.0), j({2, 5, 2}, 0.0), y({1, 6, 1}, 0.5);
  std::iota(x.data.begin(), x.data.end(), -20.0);
  x.data[3] = kNaN;
  j.data[1] = 3;  // row 0 of batch 0 picks x[0, 0, 3] (NaN), the rest x[b, 0, 0]
  auto value = [](const Tensor<double>& t) { return VmValue{std::make_shared<Tensor<double>>(t)}; };
  VmValue out = Vm(m).run("main", {value(x), value(i), value(j), value(y)});
  const VmTuple& parts = *out.tuple();
  EXPECT_EQ(parts[0].tensor()->data[0], x.data[4]);  // gather_elements: x[0, 1, 0]
  EXPECT_TRUE(std::isnan(parts[1].tensor()->data[0]));
  EXPECT_EQ(parts[1].tensor()->data[1], -20);
  EXPECT_EQ(parts[2].tensor()->shape, (Shape{2, 6, 4}));
}

// The mask PyTorch's attention export builds: a causal comparison of positions, And with the
// padding mask, and the softmax's NaN guard Where(IsNaN(p), 0, p); max/min of three inputs.
TEST(MaskOps, ExportedMaskIdiomsRunOnTheVm) {
  ModelBuilder mb(17);
  mb.input("q", {std::string("s"), int64_t{1}}, onnx::TensorProto::INT64);
  mb.input("k", {int64_t{1}, std::string("t")}, onnx::TensorProto::INT64);
  mb.input("pad", {int64_t{1}, std::string("t")}, onnx::TensorProto::BOOL);
  mb.input("p", {std::string("s"), std::string("t")});
  mb.initializer("zero", {}, {0});
  mb.node("LessOrEqual", {"k", "q"}, {"causal"});
  mb.node("And", {"causal", "pad"}, {"allowed"});
  mb.node("Not", {"allowed"}, {"masked"});
  mb.node("IsNaN", {"p"}, {"nan"});
  mb.node("Where", {"nan", "zero", "p"}, {"guarded"});
  mb.node("Max", {"guarded", "zero", "p"}, {"hi"});
  mb.node("Min", {"guarded", "zero"}, {"lo"});
  mb.node("Cos", {"lo"}, {"c"});
  mb.output("masked", onnx::TensorProto::BOOL);
  mb.output("hi");
  mb.output("c");
  ImportedModel m = mb.import();
  Tensor<double> q({2, 1}, V{0, 1}), k({1, 3}, V{0, 1, 2}), pad({1, 3}, V{1, 0, 1});
  Tensor<double> p({2, 3}, V{1, kNaN, -2, 3, -4, kNaN});
  auto out = run_imported(m, {{"q", q}, {"k", k}, {"pad", pad}, {"p", p}}, "test.onnx");
  // allowed(i, j) = j <= i and pad[j]: row 0: 1 0 0; row 1: 1 0 0.
  EXPECT_EQ(out.at("masked").data, (V{0, 1, 1, 0, 1, 1}));
  const V& hi = out.at("hi").data;  // max(guarded, 0, p): NaN where p is
  EXPECT_EQ(hi[0], 1);
  EXPECT_TRUE(std::isnan(hi[1]));
  EXPECT_EQ(hi[3], 3);
  EXPECT_EQ(hi[4], 0);
  const V& c = out.at("c").data;  // cos(min(guarded, 0))
  EXPECT_DOUBLE_EQ(c[1], 1.0);
  EXPECT_DOUBLE_EQ(c[2], static_cast<double>(static_cast<float>(std::cos(-2.0))));
}

// ONNX's types are the model's: an int64 input is i64, a comparison bool, an integer Div truncates
// toward zero, Cast converts (wrapping at the width), and `weft model run` writes each output in
// its type. Ids of 2^40 + k are no f32 values: a float path would round them.
TEST(MaskOps, TensorsKeepTheirOnnxTypesAndIntegersStayExact) {
  ModelBuilder mb(17);
  mb.input("ids", {std::string("n")}, onnx::TensorProto::INT64);
  mb.input("x", {std::string("n")});
  mb.initializer("two", {}, {2}, onnx::TensorProto::INT64);
  mb.initializer("limit", {}, {1099511627778.0}, onnx::TensorProto::INT64);
  mb.node("Div", {"ids", "two"}, {"half"});
  mb.node("Add", {"ids", "ids"}, {"twice"});
  mb.node("Less", {"ids", "limit"}, {"low"});
  ModelBuilder::attr(mb.node("Cast", {"ids"}, {"narrow"}), "to", int64_t{onnx::TensorProto::INT32});
  ModelBuilder::attr(mb.node("Cast", {"low"}, {"low_f"}), "to", int64_t{onnx::TensorProto::FLOAT});
  mb.node("Mul", {"low_f", "x"}, {"kept"});
  mb.output("half", onnx::TensorProto::INT64);
  mb.output("twice", onnx::TensorProto::INT64);
  mb.output("low", onnx::TensorProto::BOOL);
  mb.output("narrow", onnx::TensorProto::INT32);
  mb.output("kept");
  ImportedModel m = mb.import();
  const Function& fn = *m.module.find_function("main");
  EXPECT_EQ(fn.params.at(0).type.dtype, DType::i64);
  EXPECT_EQ(fn.params.at(1).type.dtype, DType::f32);
  ASSERT_EQ(fn.ret.fields.size(), 5u);
  EXPECT_EQ(fn.ret.fields[0].dtype, DType::i64);
  EXPECT_EQ(fn.ret.fields[2].dtype, DType::boolean);
  EXPECT_EQ(fn.ret.fields[3].dtype, DType::i32);
  EXPECT_EQ(fn.ret.fields[4].dtype, DType::f32);
  const double big = 1099511627777.0;  // 2^40 + 1
  Tensor<double> ids({3}, V{big, -7, 5}), x({3}, V{0.5, 1.5, 2.5});
  auto out = run_imported(m, {{"ids", ids}, {"x", x}}, "test.onnx");
  EXPECT_EQ(out.at("half").data, (V{549755813888.0, -3, 2}));
  EXPECT_EQ(out.at("twice").data, (V{2 * big, -14, 10}));
  EXPECT_EQ(out.at("low").data, (V{1, 1, 1}));
  EXPECT_EQ(out.at("narrow").data, (V{1, -7, 5}));  // 2^40 + 1 wraps to 1 in int32
  EXPECT_EQ(out.at("kept").data, (V{0.5, 1.5, 2.5}));
  auto elements = imported_output_elements(m);
  EXPECT_EQ(elements.at("half"), NpyElement::i8);
  EXPECT_EQ(elements.at("low"), NpyElement::b1);
  EXPECT_EQ(elements.at("narrow"), NpyElement::i4);
  EXPECT_EQ(elements.at("kept"), NpyElement::f4);
}

// CumSum, Einsum, Trilu and ScatterND as exporters use them, at symbolic sizes: position ids
// from a padding mask (CumSum of int64, exact), attention scores by Einsum, their lower triangle,
// and one row of a tensor overwritten.
TEST(MaskOps, CumSumEinsumTriluAndScatterNdRunAtSymbolicSizes) {
  ModelBuilder mb(17);
  mb.input("mask", {std::string("b"), std::string("s")}, onnx::TensorProto::INT64);
  mb.input("q", {std::string("b"), std::string("s"), int64_t{2}});
  mb.input("k", {std::string("b"), std::string("s"), int64_t{2}});
  mb.initializer("axis", {}, {1}, onnx::TensorProto::INT64);
  mb.initializer("at", {1, 2}, {1, 2}, onnx::TensorProto::INT64);
  mb.initializer("value", {1, 2}, {7, 7});
  mb.node("CumSum", {"mask", "axis"}, {"pos"});
  ModelBuilder::attr(mb.node("CumSum", {"mask", "axis"}, {"before"}), "exclusive", int64_t{1});
  ModelBuilder::attr(mb.node("Einsum", {"q", "k"}, {"scores"}), "equation",
                     std::string("bid,bjd->bij"));
  ModelBuilder::attr(mb.node("Trilu", {"scores"}, {"lower"}), "upper", int64_t{0});
  mb.node("ScatterND", {"q", "at", "value"}, {"marked"});
  mb.output("pos", onnx::TensorProto::INT64);
  mb.output("before", onnx::TensorProto::INT64);
  mb.output("lower");
  mb.output("marked");
  ImportedModel m = mb.import();
  // b = 2, s = 3; q . k over the last dim.
  Tensor<double> mask({2, 3}, V{1, 1, 1, 0, 1, 1});
  Tensor<double> q({2, 3, 2}, V{1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 1, 1});
  Tensor<double> k({2, 3, 2}, V{1, 2, 3, 4, 5, 6, 1, 0, 0, 1, 1, 1});
  auto out = run_imported(m, {{"mask", mask}, {"q", q}, {"k", k}}, "test.onnx");
  EXPECT_EQ(out.at("pos").data, (V{1, 2, 3, 0, 1, 2}));
  EXPECT_EQ(out.at("before").data, (V{0, 1, 2, 0, 0, 1}));
  V want(18, 0.0);
  for (int bb = 0; bb < 2; ++bb)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j <= i; ++j)
        for (int d = 0; d < 2; ++d)
          want[static_cast<size_t>((bb * 3 + i) * 3 + j)] +=
              q.data[static_cast<size_t>((bb * 3 + i) * 2 + d)] *
              k.data[static_cast<size_t>((bb * 3 + j) * 2 + d)];
  EXPECT_EQ(out.at("lower").data, want);
  V marked = q.data;
  marked[(1 * 3 + 2) * 2] = marked[(1 * 3 + 2) * 2 + 1] = 7;  // q[1, 2, :] = 7
  EXPECT_EQ(out.at("marked").data, marked);
}

// `expand(batch, -1, -1)` as torch.onnx exports it: Where(Equal(shape, -1), 1, shape) over a
// shape vector with the batch dim folds into symbolic shape arithmetic (no run-time comparison).
TEST(MaskOps, ComparisonIdiomsFoldInShapeArithmetic) {
  ModelBuilder mb(17);
  mb.input("x", {std::string("batch"), int64_t{1}, int64_t{4}});
  mb.input("y", {std::string("batch"), int64_t{3}, int64_t{4}});
  mb.initializer("i0", {1}, {0}, onnx::TensorProto::INT64);
  mb.initializer("tail", {2}, {-1, -1}, onnx::TensorProto::INT64);
  mb.initializer("minus1", {}, {-1}, onnx::TensorProto::INT64);
  mb.initializer("one", {}, {1}, onnx::TensorProto::INT64);
  mb.node("Shape", {"y"}, {"sy"});
  mb.node("Gather", {"sy", "i0"}, {"b"});
  ModelBuilder::attr(mb.node("Concat", {"b", "tail"}, {"want"}), "axis", int64_t{0});
  mb.node("Equal", {"want", "minus1"}, {"is_keep"});
  mb.node("Where", {"is_keep", "one", "want"}, {"shape"});
  mb.node("Max", {"shape", "one"}, {"shape2"});
  mb.node("Expand", {"x", "shape2"}, {"e"});
  mb.node("Add", {"e", "y"}, {"out"});
  mb.output("out");
  ImportedModel m = mb.import();
  std::string text = print_module(m.module);
  EXPECT_EQ(text.find("equal"), std::string::npos) << text;
  EXPECT_EQ(text.find("where"), std::string::npos) << text;
  EXPECT_EQ(text.find("dims_tensor"), std::string::npos) << text;
  Tensor<double> x({2, 1, 4}, 0.0), y({2, 3, 4}, 0.0);
  std::iota(x.data.begin(), x.data.end(), 0.0);
  auto out = run_imported(m, {{"x", x}, {"y", y}}, "test.onnx");
  EXPECT_EQ(out.at("out").shape, (Shape{2, 3, 4}));
  EXPECT_EQ(out.at("out").data[4], 0);   // row 0 repeated
  EXPECT_EQ(out.at("out").data[13], 5);  // batch 1, row 0, col 1
}

TEST(MaskOps, NodeTestsOfTheOperatorsPass) {
  const std::string root = "/usr/share/libonnx-testdata/data/node/";
  if (!std::filesystem::is_directory(root)) GTEST_SKIP() << "libonnx-testdata is not installed";
  int ran = 0;
  for (const char* t :
       {"test_equal_bcast", "test_less_equal_bcast", "test_greater", "test_and_bcast4v3d",
        "test_xor_bcast3v1d", "test_not_3d", "test_isnan", "test_isinf_negative",
        "test_max_example", "test_min_one_input", "test_mean_example", "test_cos", "test_sin",
        "test_gather_elements_negative_indices", "test_gathernd_example_int32_batch_dim1",
        "test_where_example"}) {
    if (!std::filesystem::is_directory(root + t)) continue;
    NodeTestResult r = run_node_test(root + t);
    EXPECT_TRUE(r.passed) << t << ": " << r.message;
    ran += r.data_sets;
  }
  EXPECT_GE(ran, 16);
}

}  // namespace
}  // namespace weft
#endif
