// The operator table: its rows agree with themselves (formulas vs real semantics, algebraic facts,
// Lax membership of composites), and the operators added through rows alone (sigmoid, tanh, neg)
// work in every layer: text, interpreter, verifier, abstract expressions, error bounds, cost, the
// CPU backend, CUDA (host emulation), the search, and the test generators.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <string_view>

#include "absexpr/of_graph.h"
#include "core/target.h"
#include "cost/op_work.h"
#include "driver/optimize.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "lower/pipeline.h"
#include "runtime/program.h"
#include "search/absexpr_oracle.h"
#include "testing/mutate.h"
#include "testing/random_graph.h"
#include "tests/emulation_check.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"
#include "verify/error_bound.h"

WEFT_TEST_TIERS("unit", "loads_generated");

namespace weft {
namespace {

constexpr OpKind kNewOps[] = {OpKind::sigmoid, OpKind::tanh, OpKind::neg};

Graph parse(const std::string& text) {
  return parse_graph(text, "ops_test.weft");
}

// ---- The rows

// A formula in doubles, to hold it against the row's real semantics.
struct DoubleAlgebra {
  using Value = double;
  double a, b;
  const Attrs& attrs;
  double x() const { return a; }
  double y() const { return b; }
  double attribute(const char* name) const { return attrs.get_rational(name).to_double(); }
  double literal(const Rational& r) const { return r.to_double(); }
  double add(double l, double r) const { return l + r; }
  double sub(double l, double r) const { return l - r; }
  double mul(double l, double r) const { return l * r; }
  double div(double l, double r) const { return l / r; }
  double exp(double l) const { return std::exp(l); }
};

// Attributes a row's operator can run with (its rational attribute set to 3/4).
Attrs sample_attrs(const OpInfo& info) {
  Attrs a;
  if (const AttrSpec* c = rational_attr(info)) a.set(c->name, *Rational::make(3, 4));
  return a;
}

const double kSamples[] = {-2.5, -0.75, -0.125, 0.3, 1.0, 1.7};

TEST(OpTable, FormulasAgreeWithTheRealSemantics) {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> point(-4.0, 4.0);
  int checked = 0;
  for (const OpInfo& info : all_ops()) {
    if (info.formula.empty()) continue;
    Attrs attrs = sample_attrs(info);
    std::vector<std::pair<double, double>> points;
    for (double a : kSamples)
      for (double b : kSamples) points.emplace_back(a, b);
    for (int i = 0; i < 200; ++i) points.emplace_back(point(rng), point(rng));
    for (auto [a, b] : points) {
      DoubleAlgebra algebra{a, b, attrs};
      const double want = real_value(info, attrs, a, b);
      ASSERT_TRUE(std::isfinite(want)) << info.name << "(" << a << ", " << b << ")";
      EXPECT_NEAR(evaluate_formula(info.formula, algebra), want, 1e-12 * (1 + std::abs(want)))
          << info.name << "(" << a << ", " << b << ")";
    }
    ++checked;
  }
  EXPECT_GE(checked, 9);  // exp sqr scale shift add sub mul div neg
}

TEST(OpTable, AlgebraicFactsHoldForElementwiseOperators) {
  for (const OpInfo& info : all_ops()) {
    if (!is_elementwise(info.kind)) continue;
    SCOPED_TRACE(info.name);
    Attrs attrs = sample_attrs(info);
    auto f = [&](double a, double b) { return real_value(info, attrs, a, b); };
    const bool binary = info.max_inputs == 2;
    for (double a : kSamples)
      for (double b : kSamples) {
        for (double c : {-3.0, 0.5, 2.0}) {
          if (info.homogeneous & 1) {
            EXPECT_NEAR(f(c * a, b), c * f(a, b), 1e-12);
          }
          if (info.homogeneous & 2) {
            EXPECT_NEAR(f(a, c * b), c * f(a, b), 1e-12);
          }
        }
        if (info.commutative) {
          EXPECT_DOUBLE_EQ(f(a, b), f(b, a));
        }
      }
    // Facts a row does not claim are false somewhere (so the search may not use them).
    if (binary && !info.commutative) {
      EXPECT_NE(f(1.0, 2.0), f(2.0, 1.0));
    }
    if (!(info.homogeneous & 1)) {
      EXPECT_NE(f(-3.0 * 0.3, 1.7), -3.0 * f(0.3, 1.7));
    }
    if (info.same_operands_redundant) {
      // op(x, x) is a constant (sub, div) or another operator (mul is sqr).
      const bool constant = f(0.3, 0.3) == f(1.7, 1.7);
      EXPECT_TRUE(constant || info.kind == OpKind::mul);
    }
  }
}

// The level rule (ir/ops.h, LevelMask): every row appears somewhere; a model-only row in model
// functions alone; a µGraph row in a model function exactly when it is a kernel-level operator
// other than `kernel`.
TEST(OpTable, EveryRowSaysWhereItAppearsAndModelOnlyRowsOnlyInModels) {
  int model_only = 0, shared = 0;
  for (const OpInfo& info : all_ops()) {
    EXPECT_NE(info.levels, 0) << info.name;
    EXPECT_EQ(op_by_name(info.name), info.kind) << info.name;
    if (is_model_only(info.kind)) {
      ++model_only;
      EXPECT_EQ(info.levels, kAtModel) << info.name;
      EXPECT_EQ(info.symbolic, Symbolic::none) << info.name;
      EXPECT_EQ(info.infer, nullptr) << info.name;
      EXPECT_FALSE(info.lax) << info.name;
      continue;
    }
    EXPECT_NE(info.levels & kAtUGraph, 0) << info.name;
    const bool model = (info.levels & kAtModel) != 0;
    EXPECT_EQ(model, (info.levels & kAtKernel) != 0 && info.kind != OpKind::kernel) << info.name;
    shared += model;
  }
  // The model operators the model layer had before they joined this table (issue 14).
  for (const char* name : {"permute",
                           "embedding",
                           "rope",
                           "causal_mask",
                           "softmax_safe",
                           "slice",
                           "where",
                           "layer_norm",
                           "gelu_tanh",
                           "attention",
                           "conv",
                           "max_pool",
                           "avg_pool",
                           "max_pool_indices",
                           "global_avg_pool",
                           "global_max_pool",
                           "lrn",
                           "pow",
                           "gather",
                           "slice_steps",
                           "expand",
                           "fill",
                           "dims_tensor",
                           "cast",
                           "clip",
                           "abs",
                           "reciprocal",
                           "log",
                           "range",
                           "tile",
                           "pad"}) {
    std::optional<OpKind> kind = op_by_name(name);
    ASSERT_TRUE(kind.has_value()) << name;
    EXPECT_TRUE(is_model_only(*kind)) << name;
  }
  EXPECT_EQ(model_only, 50);
  EXPECT_GT(shared, 15);  // the elementwise, matmul, reduction, movement and composite rows
  EXPECT_NE(op_info(OpKind::matmul).levels & kAtModel, 0);
  EXPECT_EQ(op_info(OpKind::iter).levels & kAtModel, 0);
}

TEST(OpTable, MicroGraphLayersRefuseModelOnlyOperatorsWithLocatedErrors) {
  // The .weft parser refuses `text` at the operator's name, line:col.
  auto refused = [](const std::string& text, const char* name, int line, int col) {
    try {
      parse(text);
      ADD_FAILURE() << name << " parsed:\n" << text;
    } catch (const UserError& e) {
      EXPECT_EQ(e.loc().line, line) << name;
      EXPECT_EQ(e.loc().col, col) << name;
      EXPECT_NE(e.message().find("'" + std::string(name) + "' is a model-level operator"),
                std::string::npos)
          << e.message();
    }
  };
  int refusals = 0;
  for (const OpInfo& info : all_ops()) {
    if (!is_model_only(info.kind)) continue;
    ++refusals;
    refused(fmt::format("input X: f32[2, 4]\nY = {}(X)\noutput Y\n", info.name), info.name, 2, 5);
    refused(fmt::format("input X: f32[4, 6]\nY = kernel(X, grid=[2, 3], block=32) {{\n"
                        "  x = iter(X, imap=[0, 1])\n  y = {}(x)\n  Y = save(y, omap=[1, 0])\n"
                        "}}\noutput Y\n",
                        info.name),
            info.name, 4, 7);
    // Nested in another call's operands.
    refused(fmt::format("input X: f32[2, 4]\nY = exp({}(X))\noutput Y\n", info.name), info.name, 2,
            9);
    // The graph builder (the Python bindings' and the passes' way in): a user error, not a bug.
    GraphBuilder b(Level::kernel, "g");
    ValueId x = b.add_input("X", TensorType{DType::f32, {2, 4}});
    EXPECT_THROW(b.add_op(info.kind, {x}, {}, {}, SourceLoc{"g", 1, 1}), UserError) << info.name;
  }
  EXPECT_EQ(refusals, 50);
}

TEST(OpTable, CompositesAreLaxExactlyWhenTheirExpansionIs) {
  for (const OpInfo& info : all_ops()) {
    if (info.op_class != OpClass::composite) continue;
    Attrs attrs = sample_attrs(info);
    Graph g = parse(fmt::format("input X: f32[2, 4]\nY = {}(X{})\noutput Y\n", info.name,
                                rational_attr(info) ? ", eps=3/4" : ""));
    Graph e = composite_expansion(g, g.ops.at(0));
    bool lax = true;
    for (const Op& op : e.ops) lax &= op_info(op.kind).lax;
    EXPECT_EQ(info.lax, lax) << info.name;
  }
}

// The kinds' values are stable identifiers (search checkpoints store them, the finite-field
// verifier derives its random functions from them): ir/ops.def appends, never reorders.
TEST(OpTable, KindValuesAreStable) {
  EXPECT_EQ(static_cast<int>(OpKind::exp), 0);
  EXPECT_EQ(static_cast<int>(OpKind::add), 8);
  EXPECT_EQ(static_cast<int>(OpKind::matmul), 12);
  EXPECT_EQ(static_cast<int>(OpKind::sum), 13);
  EXPECT_EQ(static_cast<int>(OpKind::kernel), 27);
  EXPECT_EQ(static_cast<int>(OpKind::sigmoid), 29);
  EXPECT_EQ(static_cast<int>(OpKind::erf), 32);
  EXPECT_EQ(static_cast<int>(OpKind::permute), 33);
  EXPECT_EQ(static_cast<int>(OpKind::conv), 43);
  EXPECT_EQ(static_cast<int>(OpKind::pad), 63);
  EXPECT_EQ(static_cast<int>(OpKind::equal), 64);
  EXPECT_EQ(static_cast<int>(OpKind::gather_nd), 80);
  EXPECT_EQ(static_cast<int>(OpKind::scatter_nd), 81);
  EXPECT_EQ(static_cast<int>(OpKind::fused_conv), 82);
  EXPECT_EQ(std::string(op_kind_name(OpKind::erf)), "erf");
  // The reserved rows follow the last operator and are empty outside their test.
  EXPECT_EQ(static_cast<int>(OpKind::scratch_unary), 83);
  EXPECT_EQ(kNumOpKinds, 85);
  for (const OpInfo& info : all_ops()) EXPECT_FALSE(is_scratch_slot(info.kind)) << info.name;
}

TEST(OpTable, ClassListsAndRowsAgree) {
  for (const OpInfo& info : all_ops()) {
    EXPECT_EQ(info.op_class, class_of(info.kind)) << info.name;
    EXPECT_EQ(op_by_name(info.name), info.kind);
    const bool elementwise = is_elementwise(info.kind);
    // Every elementwise operator has real semantics and scalar code for both emitters; an
    // elementwise model-only row (pow, abs, ...) has real semantics and a CUDA form only.
    const bool model_scalar = is_model_only(info.kind) && has_scalar_forms(info);
    EXPECT_EQ(elementwise || model_scalar, info.real != nullptr) << info.name;
    EXPECT_EQ(elementwise, info.code.cpu != nullptr) << info.name;
    EXPECT_EQ(elementwise || model_scalar, info.code.cuda != nullptr) << info.name;
    EXPECT_EQ(elementwise || model_scalar, info.device == DeviceKernel::elementwise) << info.name;
    if (elementwise) {
      EXPECT_EQ(info.lax, !info.formula.empty()) << info.name;
      // The patterns use the rational attribute exactly when the row has one.
      for (const char* code : {info.code.cpu, info.code.cuda})
        EXPECT_EQ(std::string_view(code).find("{2}") != std::string_view::npos,
                  rational_attr(info) != nullptr)
            << info.name << ": " << code;
    }
    EXPECT_EQ(info.lax, info.symbolic != Symbolic::max && info.symbolic != Symbolic::none &&
                            (!elementwise || !info.formula.empty()) &&
                            (info.symbolic != Symbolic::expansion || info.composite_lax))
        << info.name;
    EXPECT_EQ(elementwise, info.cost == CostClass::per_result_element) << info.name;
    EXPECT_EQ(elementwise,
              info.fusion == FusionPattern::elementwise || info.fusion == FusionPattern::broadcast)
        << info.name;
  }
}

TEST(AbstractTerm, StepsAgreeWithTheFormulas) {
  int checked = 0;
  for (const OpInfo& info : all_ops()) {
    if (info.formula.empty()) continue;
    for (const Rational& c : {Rational(0), *Rational::make(3, 4)}) {
      TermStore store;
      TermId x = store.var("X"), y = store.var("Y");
      EXPECT_EQ(store.str(abstract_term(info.kind, x, y, 0, c, store)),
                store.str(abstract_formula_term(info.kind, x, y, c, store)))
          << info.name << " with constant " << c.str();
    }
    ++checked;
  }
  EXPECT_GE(checked, 9);
}

// ---- sigmoid, tanh, neg in every layer

const Tensor<double> kX({1, 6}, std::vector<double>{-3.0, -0.5, 0.0, 0.25, 1.5, 4.0});

Tensor<double> run_one(const std::string& call) {
  Graph g = parse("input X: f32[1, 6]\nY = " + call + "\noutput Y\n");
  return evaluate_real(g, {kX}, /*f32=*/false).at(0);
}

TEST(NewOps, InterpreterValues) {
  Tensor<double> s = run_one("sigmoid(X)"), t = run_one("tanh(X)"), n = run_one("neg(X)");
  for (size_t i = 0; i < kX.data.size(); ++i) {
    double x = kX.data[i];
    EXPECT_DOUBLE_EQ(s.data[i], 1 / (1 + std::exp(-x)));
    EXPECT_DOUBLE_EQ(t.data[i], std::tanh(x));
    EXPECT_EQ(n.data[i], -x);
  }
  EXPECT_DOUBLE_EQ(s.data[2], 0.5);
  EXPECT_LT(s.data[0], 0.05);
  EXPECT_GT(t.data[5], 0.999);
  // Far out, the sigmoid saturates instead of overflowing.
  Graph g = parse("input X: f32[1, 2]\nY = sigmoid(X)\noutput Y\n");
  auto far = evaluate_real(g, {Tensor<double>({1, 2}, std::vector<double>{-1000, 1000})}, true);
  EXPECT_EQ(far.at(0).data, (std::vector<double>{0.0, 1.0}));
}

// erf (issue 15, ONNX Erf) came as one more row: values at points checked by hand against
// tables of the error function, and the printed program reads back.
TEST(NewOps, ErfValuesAndText) {
  Tensor<double> e = run_one("erf(X)");
  EXPECT_NEAR(e.data[0], -0.9999779095030014, 1e-15);  // erf(-3)
  EXPECT_NEAR(e.data[1], -0.5204998778130465, 1e-15);  // erf(-1/2)
  EXPECT_EQ(e.data[2], 0.0);
  EXPECT_NEAR(e.data[3], 0.2763263901682369, 1e-15);  // erf(1/4)
  EXPECT_NEAR(e.data[4], 0.9661051464753108, 1e-15);  // erf(3/2)
  EXPECT_GT(e.data[5], 0.99999998);
  EXPECT_FALSE(op_info(OpKind::erf).lax);
  Graph g = parse(
      "input X: f32[4, 8]\nY = kernel(X, grid=[2], block=32) {\n"
      "  x = iter(X, imap=[0], fmap=1)\n  y = erf(x)\n  Y = save(y, omap=[0])\n}\n"
      "output Y\n");
  std::string printed = print_graph(g);
  EXPECT_NE(printed.find("erf(x)"), std::string::npos) << printed;
  EXPECT_EQ(parse(printed), g);
}

TEST(NewOps, TextRoundTripsAtEveryLevel) {
  const std::string text =
      "program new_ops\n"
      "input X: f32[8, 64]\n"
      "input W: f32[64, 32]\n"
      "N = neg(X)\n"
      "O = kernel(N, W, grid=[2], block=128, loop=2) {\n"
      "  x = iter(N, fmap=1)\n"
      "  w = iter(W, imap=[1], fmap=0)\n"
      "  t = tanh(x)\n"
      "  m = matmul(t, w)\n"
      "  a = accum_sum(m)\n"
      "after:\n"
      "  y = thread(a) {\n"
      "    s = sigmoid(a)\n"
      "    output s\n"
      "  }\n"
      "  O = save(y, omap=[1])\n"
      "}\n"
      "output O\n";
  Graph g = parse(text);
  std::string printed = print_graph(g);
  EXPECT_EQ(parse(printed), g);
  for (const char* call : {"neg(X)", "tanh(x)", "sigmoid(a)"})
    EXPECT_NE(printed.find(call), std::string::npos) << call << " in\n" << printed;
}

TEST(NewOps, WeftOpsListsThem) {
  const auto [rc, listing] = test::run_weft("ops");
  ASSERT_EQ(rc, 0) << listing;
  const std::string& out = listing;  // a reference a lambda can capture (clang 14)
  auto line_of = [&](const std::string& name) {
    size_t at = out.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << name;
    return at == std::string::npos ? std::string()
                                   : out.substr(at + 1, out.find('\n', at + 1) - at);
  };
  EXPECT_NE(line_of("sigmoid").find("uninterpreted"), std::string::npos);
  EXPECT_NE(line_of("tanh").find("uninterpreted"), std::string::npos);
  EXPECT_NE(line_of("neg").find(" lax "), std::string::npos) << line_of("neg");
  for (const char* name : {"sigmoid", "tanh", "neg"})
    EXPECT_NE(line_of(name).find(" elementwise "), std::string::npos) << line_of(name);
  EXPECT_NE(line_of("matmul").find(" out-elementwise-fusable "), std::string::npos);
  // Levels: M marks model functions; a model-only row has it alone and no verifier fragment.
  EXPECT_NE(line_of("matmul").find(" KBM "), std::string::npos) << line_of("matmul");
  EXPECT_NE(line_of("iter").find(" B "), std::string::npos) << line_of("iter");
  EXPECT_NE(line_of("rope").find(" M      - "), std::string::npos) << line_of("rope");
}

VerifyResult verify(const std::string& body_a, const std::string& body_b) {
  const bool two = body_a.find('B') != std::string::npos || body_b.find('B') != std::string::npos;
  const std::string head =
      two ? "input A: f32[4, 8]\ninput B: f32[4, 8]\n" : "input A: f32[4, 8]\n";
  VerifyOptions o;
  o.threads = 1;
  return verify_equivalent(parse(head + body_a + "output Y\n"), parse(head + body_b + "output Y\n"),
                           o);
}

TEST(NewOps, VerifierAcceptsEqualPrograms) {
  // neg is Lax: its linear identities are proven.
  for (auto [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"Y = neg(A)\n", "Y = scale(A, factor=-1)\n"},
           {"N = neg(A)\nY = neg(N)\n", "Y = scale(A, factor=1)\n"},
           {"S = add(A, B)\nY = neg(S)\n", "N = neg(A)\nY = sub(N, B)\n"},
           {"N = neg(A)\nY = mul(N, B)\n", "P = mul(B, A)\nY = neg(P)\n"},
           // sigmoid and tanh are uninterpreted: equal arguments give equal results.
           {"S = add(A, B)\nY = sigmoid(S)\n", "S = add(B, A)\nY = sigmoid(S)\n"},
           {"T = tanh(A)\nY = mul(T, B)\n", "T = tanh(A)\nY = mul(B, T)\n"},
           {"N = neg(A)\nE = exp(N)\nY = tanh(E)\n",
            "E = exp(A)\nR = div(E, E)\nQ = div(R, E)\nY = tanh(Q)\n"},
       }) {
    VerifyResult r = verify(a, b);
    EXPECT_EQ(r.verdict, Verdict::equivalent) << a << "vs\n" << b << r.message;
  }
}

TEST(NewOps, VerifierRejectsDifferentPrograms) {
  for (auto [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"Y = neg(A)\n", "Y = scale(A, factor=-2)\n"},
           {"Y = neg(A)\n", "Y = sqr(A)\n"},
           {"Y = sigmoid(A)\n", "Y = tanh(A)\n"},
           {"Y = sigmoid(A)\n", "Y = silu(A)\n"},
           {"Y = tanh(A)\n", "Y = gelu(A)\n"},
           {"S = add(A, B)\nY = sigmoid(S)\n", "S = sub(A, B)\nY = sigmoid(S)\n"},
           {"N = neg(A)\nY = tanh(N)\n", "T = tanh(A)\nY = neg(T)\n"},  // odd, but uninterpreted
       }) {
    VerifyResult r = verify(a, b);
    EXPECT_NE(r.verdict, Verdict::equivalent) << a << "vs\n" << b;
    EXPECT_NE(r.verdict, Verdict::error) << r.message;
  }
}

TEST(NewOps, IdentitiesBetweenUninterpretedOperatorsAreNotProven) {
  // tanh(x) = 2 sigmoid(2x) - 1 over the reals, and the interpreter agrees. sigmoid and tanh are
  // uninterpreted functions to the verifier (like silu and gelu: their rows have no Lax formula),
  // so it does not prove the identity: the verdict is "not equivalent modulo uninterpreted
  // functions", and the search, which keeps only verified candidates, never trades one for the
  // other. (Giving them formulas over exp would make identities like this one provable but put
  // nested applications, tanh(sigmoid(x)), outside the Lax fragment: docs/verification.md.)
  const std::string tanh_text = "input A: f32[4, 8]\nY = tanh(A)\noutput Y\n";
  const std::string sigmoid_text =
      "input A: f32[4, 8]\nD = scale(A, factor=2)\nS = sigmoid(D)\nT = scale(S, factor=2)\n"
      "Y = shift(T, offset=-1)\noutput Y\n";
  Graph a = parse(tanh_text), b = parse(sigmoid_text);
  auto in = random_inputs(a, 9);
  ASSERT_NE(in[0].data[0], in[0].data[1]);
  Tensor<double> ya = evaluate_real(a, in, false).at(0), yb = evaluate_real(b, in, false).at(0);
  double largest = 0;
  for (size_t i = 0; i < ya.data.size(); ++i) {
    EXPECT_NEAR(ya.data[i], yb.data[i], 1e-12);
    largest = std::max(largest, std::abs(ya.data[i]));
  }
  EXPECT_GT(largest, 0.1);  // not a trivial output
  VerifyOptions o;
  o.threads = 1;
  EXPECT_EQ(verify_equivalent(a, b, o).verdict, Verdict::not_equivalent);
}

TEST(NewOps, AbstractExpressionsFollowTheRows) {
  TermStore store;
  Graph g = parse(
      "input X: f32[4, 8]\ninput W: f32[8, 2]\nM = matmul(X, W)\nS = sigmoid(M)\nT = tanh(S)\n"
      "Y = neg(T)\noutput Y\n");
  std::vector<TermId> out = abstract_outputs(g, store);
  // neg is a constant factor, abstracted away; sigmoid and tanh are function symbols.
  EXPECT_EQ(store.str(out.at(0)), "(tanh (sigmoid (sum 8 (mul X W))))");
  EXPECT_EQ(store.parse("(tanh (sigmoid (sum 8 (mul X W))))"), out[0]);
  EXPECT_THROW(store.parse("(neg X)"), UserError);
  // The search's oracle builds the same terms through the same rule.
  AbsExprOracle oracle(g);
  TermRef x = oracle.input_term(0), w = oracle.input_term(1);
  TermRef m = oracle.op_term(OpKind::matmul, x, w, 8, Rational(0));
  TermRef t = oracle.op_term(
      OpKind::neg,
      oracle.op_term(OpKind::tanh, oracle.op_term(OpKind::sigmoid, m, 0, 0, 0), 0, 0, 0), 0, 0, 0);
  EXPECT_TRUE(oracle.equivalent(t, 0));
  EXPECT_FALSE(oracle.equivalent(oracle.op_term(OpKind::sigmoid, m, 0, 0, 0), 0));
  EXPECT_TRUE(oracle.viable(oracle.op_term(OpKind::sigmoid, m, 0, 0, 0)));
  EXPECT_FALSE(oracle.viable(oracle.op_term(OpKind::tanh, m, 0, 0, 0)));
}

TEST(NewOps, ErrorBoundsCountUninterpretedApplications) {
  Graph g = parse("input X: f32[4, 8]\nS = sigmoid(X)\nT = tanh(S)\nY = neg(T)\noutput Y\n");
  DegreeStats d = degree_stats(g).at(0);
  EXPECT_EQ(d.ufs, 2);  // each element passes through two uninterpreted applications
  EXPECT_EQ(d.exps, 0);
  EXPECT_EQ(d.num, 1);
  EXPECT_EQ(d.den, 0);
  Graph n = parse("input X: f32[4, 8]\nN = neg(X)\nY = mul(N, X)\noutput Y\n");
  DegreeStats e = degree_stats(n).at(0);
  EXPECT_EQ(e.ufs, 0);
  EXPECT_EQ(e.num, 2);  // a constant factor keeps the degree
}

TEST(NewOps, CostCountsTheirIssueSlots) {
  EXPECT_EQ(issue_slots(OpKind::neg), 1);
  EXPECT_EQ(issue_slots(OpKind::sigmoid), 2 + 2 * kSfuSlots);
  EXPECT_EQ(issue_slots(OpKind::tanh), 7 + 2 * kSfuSlots);
  EXPECT_GT(issue_slots(OpKind::sigmoid), issue_slots(OpKind::exp));
  Graph g = parse("input X: f32[4, 8]\nY = sigmoid(X)\noutput Y\n");
  EXPECT_EQ(cuda_flops_of(g, g.ops.at(0)), 2.0 * issue_slots(OpKind::sigmoid) * 32);
}

const char* kKernelLevel =
    "program new_ops\n"
    "input X: f32[8, 64]\n"
    "input W: f32[64, 32]\n"
    "A = matmul(X, W)\n"
    "S = sigmoid(A)\n"
    "T = tanh(A)\n"
    "N = neg(T)\n"
    "O = mul(S, N)\n"
    "output O\n";

// Block-level ops in the loop (neg, tanh) and a thread graph after it (sigmoid, neg).
std::string fused(const std::string& dtype) {
  return "program new_ops_fused\n"
         "input X: " +
         dtype +
         "[8, 64]\n"
         "input W: " +
         dtype +
         "[64, 32]\n"
         "O = kernel(X, W, grid=[2], block=128, loop=2) {\n"
         "  x = iter(X, fmap=1)\n"
         "  w = iter(W, imap=[1], fmap=0)\n"
         "  n = neg(x)\n"
         "  t = tanh(n)\n"
         "  m = matmul(t, w)\n"
         "  a = accum_sum(m)\n"
         "after:\n"
         "  y = thread(a) {\n"
         "    s = sigmoid(a)\n"
         "    q = neg(s)\n"
         "    p = mul(q, a)\n"
         "    output p\n"
         "  }\n"
         "  O = save(y, omap=[1])\n"
         "}\n"
         "output O\n";
}

void expect_cpu_matches_interpreter(const Graph& g) {
  test::expect_cpu_backend_matches_interpreter(g, 5);
}

TEST(NewOps, CpuBackendMatchesTheInterpreter) {
  expect_cpu_matches_interpreter(parse(kKernelLevel));
  expect_cpu_matches_interpreter(parse(fused("f32")));
}

TEST(NewOps, CudaHostEmulationMatchesTheInterpreter) {
  for (const std::string& text : {std::string(kKernelLevel), fused("f32"), fused("f16")}) {
    Graph g = parse(text);
    ProgramPlan plan = lower_graph(g, target_by_name("h100"));
    auto prog = load_program(plan, Backend::cuda_emulation);
    for (const char* form : {"(1.0f / (1.0f + expf(-", "tanhf(", "(-"})
      EXPECT_NE(prog->source().find(form), std::string::npos) << form;
    auto cmp = test::compare_emulation(g, plan, *prog, 7);
    ASSERT_FALSE(cmp.empty());
    for (const Comparison& c : cmp)
      EXPECT_TRUE(c.ok) << g.name << ": scaled error " << c.scaled_error << " > " << c.tolerance;
  }
}

TEST(NewOps, SearchFusesThemWhenConfigured) {
  Graph program = parse(
      "program new_ops_linear\n"
      "input X: f16[4, 16]\n"
      "input W: f16[16, 8]\n"
      "A = matmul(X, W)\n"
      "S = sigmoid(A)\n"
      "T = tanh(S)\n"
      "O = neg(T)\n"
      "output O\n");
  SearchConfig config = SearchConfig::load(test::source_path("tests/data/search_small.json"));
  config.threads = 1;
  config.max_block_ops = 6;  // matmul, accumulator, the three
  for (auto* ops : {&config.kernel_ops, &config.block_ops})
    ops->insert(ops->end(), std::begin(kNewOps), std::end(kNewOps));
  OptimizeResult r = optimize(program, config);
  ASSERT_FALSE(r.top.empty());
  const Graph& best = r.top[0].graph;
  ASSERT_EQ(best.ops.size(), 1u) << r.top[0].text;
  ASSERT_EQ(best.ops[0].kind, OpKind::kernel);
  std::set<OpKind> inside;
  for (const Op& op : best.ops[0].body->ops) inside.insert(op.kind);
  for (OpKind k : kNewOps) EXPECT_TRUE(inside.count(k)) << op_info(k).name << "\n" << r.top[0].text;
  for (const RankedCandidate& c : r.top) EXPECT_TRUE(c.verification.equivalent);
  std::printf("new_ops_linear: %lld states, %lld candidates, %lld rejected\n",
              static_cast<long long>(r.states), static_cast<long long>(r.candidates),
              static_cast<long long>(r.rejected));
}

TEST(NewOps, TestGeneratorsUseThem) {
  // The random-program generator draws every elementwise operator of the table.
  std::set<OpKind> seen;
  RandomGraphOptions opts;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Graph g = random_graph(seed, opts);
    std::function<void(const Graph&)> walk = [&](const Graph& h) {
      for (const Op& op : h.ops) {
        seen.insert(op.kind);
        if (op.body) walk(*op.body);
      }
    };
    walk(g);
  }
  for (OpKind k : kNewOps) EXPECT_TRUE(seen.count(k)) << op_info(k).name;
  // The mutation generator swaps them for other unary operators, and the verifier rejects those.
  Graph g = parse(
      "input A: f32[4, 8]\ninput B: f32[4, 8]\nS = sigmoid(A)\nT = tanh(B)\nN = neg(S)\n"
      "Y = add(N, T)\noutput Y\n");
  VerifyOptions o;
  o.threads = 1;
  EquivalenceChecker checker(g, o);
  int swapped = 0;
  for (const Mutant& m : mutants(g)) {
    if (m.description.find("-> ") == std::string::npos) continue;
    ++swapped;
    VerifyResult r = checker.check(m.graph);
    EXPECT_NE(r.verdict, Verdict::equivalent) << m.description;
  }
  EXPECT_GE(swapped, 6);
}

// ---- Every elementwise row in every layer, from the row alone

// `info`'s operator applied to a and b (b only when it is binary), its rational attribute 3/4.
std::string call(const OpInfo& info, const std::string& a, const std::string& b) {
  std::string args = a;
  if (info.max_inputs == 2) args += ", " + b;
  if (const AttrSpec* c = rational_attr(info)) args += fmt::format(", {}=3/4", c->name);
  return fmt::format("{}({})", info.name, args);
}

// Positive operands P = X^2 + 1/2 and Q = Z^2 + 1/2 (every operator's domain: sqrt, div), then
// `body`.
Graph positive_operands_program(const std::string& body) {
  return parse(
      "input X: f32[4, 8]\ninput Z: f32[4, 8]\nS = sqr(X)\nP = shift(S, offset=1/2)\n"
      "T = sqr(Z)\nQ = shift(T, offset=1/2)\n" +
      body);
}

std::vector<const OpInfo*> elementwise_rows() {
  std::vector<const OpInfo*> rows;
  for (const OpInfo& info : all_ops())
    if (is_elementwise(info.kind)) rows.push_back(&info);
  return rows;
}

TEST(EveryElementwiseRow, InterpreterAbstractExpressionsVerifierErrorBoundsAndCost) {
  ASSERT_GE(elementwise_rows().size(), 15u);
  for (const OpInfo* info : elementwise_rows()) {
    SCOPED_TRACE(info->name);
    Graph g = positive_operands_program("Y = " + call(*info, "P", "Q") + "\noutput Y\n");
    // Interpreter: the row's real semantics, element by element.
    auto in = random_inputs(g, 3);
    ASSERT_NE(in[0].data[0], in[0].data[1]);  // not a constant input
    Tensor<double> y = evaluate_real(g, in, /*f32=*/false).at(0);
    const Attrs attrs = g.ops.back().attrs;
    for (size_t i = 0; i < y.data.size(); ++i) {
      double p = in[0].data[i] * in[0].data[i] + 0.5, q = in[1].data[i] * in[1].data[i] + 0.5;
      EXPECT_NEAR(y.data[i], real_value(*info, attrs, p, q), 1e-12 * (1 + std::abs(y.data[i])));
    }
    // Abstract expressions: the formula's term, or the operator as a function symbol.
    TermStore store;
    const Graph operands = positive_operands_program("output P\noutput Q\n");
    std::vector<TermId> pq = abstract_outputs(operands, store);
    TermId t = abstract_outputs(g, store).at(0);
    if (info->formula.empty())
      EXPECT_EQ(store.str(t), fmt::format("({} {})", info->name, store.str(pq[0])));
    else
      EXPECT_EQ(t, abstract_formula_term(info->kind, pq[0], pq[1], *Rational::make(3, 4), store));
    // Verifier: the program equals itself, and not the operator applied to other operands; a
    // binary operator's operands commute exactly when the row says so.
    VerifyOptions o;
    o.threads = 1;
    EXPECT_EQ(verify_equivalent(g, g, o).verdict, Verdict::equivalent);
    Graph other = positive_operands_program("Y = " + call(*info, "Q", "Q") + "\noutput Y\n");
    EXPECT_EQ(verify_equivalent(g, other, o).verdict, Verdict::not_equivalent);
    if (info->max_inputs == 2) {
      Graph swapped = positive_operands_program("Y = " + call(*info, "Q", "P") + "\noutput Y\n");
      EXPECT_EQ(verify_equivalent(g, swapped, o).verdict == Verdict::equivalent, info->commutative);
    }
    // Error bounds: one uninterpreted application per element exactly when there is no formula.
    EXPECT_EQ(degree_stats(g).at(0).ufs, info->formula.empty() ? 1 : 0);
    // Cost: the row's issue slots per result element.
    EXPECT_GT(issue_slots(info->kind), 0);
    EXPECT_EQ(cuda_flops_of(g, g.ops.back()), 2.0 * issue_slots(info->kind) * 32);
  }
}

TEST(EveryElementwiseRow, CpuBackendAndCudaEmulationMatchTheInterpreter) {
  // One program applies every elementwise operator (one compilation per backend).
  std::string body, outputs;
  for (const OpInfo* info : elementwise_rows()) {
    body += fmt::format("Y_{} = {}\n", info->name, call(*info, "P", "Q"));
    outputs += fmt::format("output Y_{}\n", info->name);
  }
  Graph g = positive_operands_program(body + outputs);
  g.name = "every_elementwise_row";
  expect_cpu_matches_interpreter(g);
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  auto prog = load_program(plan, Backend::cuda_emulation);
  auto cmp = test::compare_emulation(g, plan, *prog, 7);
  ASSERT_EQ(cmp.size(), elementwise_rows().size());
  for (size_t i = 0; i < cmp.size(); ++i)
    EXPECT_TRUE(cmp[i].ok) << elementwise_rows()[i]->name << ": scaled error "
                           << cmp[i].scaled_error << " > " << cmp[i].tolerance;
}

}  // namespace
}  // namespace weft
