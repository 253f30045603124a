// Folding at compile time (driver/fold_constants.h): what depends on the weights alone is computed
// once and becomes a parameter, so the rewrite search may price it as free — here the summed
// weights of x w1 + x w2 = x (w1 + w2) — and the compiled module computes what the original does.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "driver/compile_model.h"
#include "driver/fold_constants.h"
#include "exec/vm.h"
#include "model/parser.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

const char* kModel = R"(module projections
sym 1 <= n <= 64

fn main(x: f32[n, 16], w1: f32[16, 8], w2: f32[16, 8], w3: f32[16, 8]) -> f32[n, 8] {
  dataflow {
    wt = reshape(w3, shape=[16, 8])
    p = matmul(x, w1)
    q = matmul(x, w2)
    s = add(p, q)
    r = matmul(x, wt)
    o = mul(s, r)
  }
  return o
}
)";

VmValue value(const Tensor<double>& t) {
  return VmValue{std::make_shared<Tensor<double>>(t)};
}

TEST(FoldConstants, TheRewrittenWeightSumIsComputedOnceAndTheModelComputesTheSame) {
  SymProver prover;
  const Module m = parse_module(kModel, "projections.wmod", prover);
  const std::map<std::string, Tensor<double>> weights = {{"w1", test::varied_tensor({16, 8}, 0.3)},
                                                         {"w2", test::varied_tensor({16, 8}, 1.1)},
                                                         {"w3", test::varied_tensor({16, 8}, 2.5)}};
  ModelCompileOptions options;
  options.bindings = {{{"n", 5}}};
  options.search_regions = false;
  options.rewrite.mode = RewriteMode::backtrack;
  options.rewrite.target = "cpu";
  options.constants = &weights;
  const ModelCompileResult r = compile_model(m, prover, options);
  ASSERT_EQ(r.rewrites.functions.size(), 1u);
  EXPECT_EQ(r.rewrites.functions[0].steps.size(), 1u) << rewrite_summary(r.rewrites);
  // The summed weights fold; the reshape of w3 stays a run-time view.
  EXPECT_EQ(r.folded_bindings, 1);
  ASSERT_EQ(r.folded.size(), 1u);
  const auto& [name, sum] = *r.folded.begin();
  for (size_t i = 0; i < sum.data.size(); ++i)
    EXPECT_NEAR(sum.data[i], weights.at("w1").data[i] + weights.at("w2").data[i], 1e-6);
  const Function* main = r.module.find_function("main");
  ASSERT_TRUE(main);
  ASSERT_EQ(main->params.size(), 5u);
  EXPECT_EQ(main->params.back().name, name);
  const Tensor<double> x = test::varied_tensor({5, 16}, 4.2);
  Vm before(m), after(r.module);
  const std::vector<double> want =
      before
          .run("main", {value(x), value(weights.at("w1")), value(weights.at("w2")),
                        value(weights.at("w3"))})
          .tensor()
          ->data;
  const std::vector<double> got =
      after
          .run("main", {value(x), value(weights.at("w1")), value(weights.at("w2")),
                        value(weights.at("w3")), value(sum)})
          .tensor()
          ->data;
  ASSERT_EQ(got.size(), want.size());
  double largest = 0;
  for (double v : want) largest = std::max(largest, std::abs(v));
  ASSERT_GT(largest, 0.1);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i;
}

// What a specialization's fixed sizes make constant (a range over n scaling the rows, n itself)
// is computed once, in the specialized function only: the generic one still computes it from n.
TEST(FoldConstants, ASpecializationsSizeDependentValuesAreComputedOnce) {
  SymProver prover;
  const Module m = parse_module(R"(module rows
sym 1 <= n <= 64

fn main(x: f32[n, 16], w: f32[16, 16]) -> f32[n, 16] {
  dataflow {
    r = range(start=0, limit=n, delta=1)
    rf = cast(r, to=1)
    rows = reshape(rf, shape=[n, 1])
    d = dims_tensor(values=[n])
    df = cast(d, to=1)
    dn = reshape(df, shape=[1, 1])
    y = mul(x, rows)
    z = mul(y, dn)
    o = matmul(z, w)
  }
  return o
}
)",
                                "rows.wmod", prover);
  const std::map<std::string, Tensor<double>> weights = {{"w", test::varied_tensor({16, 16}, 0.9)}};
  ModelCompileOptions options;
  options.bindings = {{{"n", 5}}};
  options.search_regions = false;
  options.constants = &weights;
  const ModelCompileResult r = compile_model(m, prover, options);
  ASSERT_EQ(r.specializations.size(), 1u);
  const std::string fixed = r.specializations[0].name;
  auto ops_of = [&](const std::string& fn) {
    std::multiset<std::string> ops;
    for (const Block& blk : r.module.find_function(fn)->blocks)
      for (const Binding& b : blk.bindings) ops.insert(b.call.callee);
    return ops;
  };
  EXPECT_EQ(ops_of(fixed).count("range"), 0u);
  EXPECT_EQ(ops_of(fixed).count("dims_tensor"), 0u);
  EXPECT_EQ(ops_of(fixed).count("cast"), 0u);
  EXPECT_EQ(ops_of("main.generic").count("range"), 1u);
  EXPECT_EQ(ops_of("main.generic").count("dims_tensor"), 1u);
  EXPECT_GE(r.folded_bindings, 5);
  // The folded values are weights named after the specialization, passed on by the dispatcher.
  const Function* main = r.module.find_function("main");
  ASSERT_TRUE(main);
  for (int64_t n : {5, 3}) {  // the specialization, then the generic path
    const Tensor<double> x = test::varied_tensor({n, 16}, 1.7);
    std::vector<VmValue> args;
    for (const Param& p : main->params) {
      if (p.name == "x") {
        args.push_back(value(x));
      } else if (p.name == "w") {
        args.push_back(value(weights.at("w")));
      } else {
        ASSERT_EQ(p.name.rfind(fixed + ".", 0), 0u) << p.name;
        ASSERT_TRUE(r.folded.count(p.name)) << p.name;
        args.push_back(value(r.folded.at(p.name)));
      }
    }
    EXPECT_GT(args.size(), 2u);
    const std::vector<double> want =
        Vm(m).run("main", {value(x), value(weights.at("w"))}).tensor()->data;
    const std::vector<double> got = Vm(r.module).run("main", args).tensor()->data;
    ASSERT_EQ(got.size(), want.size());
    double largest = 0;
    for (double v : want) largest = std::max(largest, std::abs(v));
    ASSERT_GT(largest, 0.1);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * largest) << n;
  }
}

TEST(FoldConstants, WithoutWeightsNothingFoldsAndABroadcastStaysAtRunTime) {
  SymProver prover;
  const Module m = parse_module(R"(module b
fn main(x: f32[4, 8], w: f32[1, 8]) -> f32[4, 8] {
  dataflow {
    e = exp(w)
    big = add(e, x)
    o = add(big, x)
  }
  return o
}
)",
                                "b.wmod", prover);
  EXPECT_EQ(fold_constants(m, {}, prover).bindings, 0);
  const FoldResult f = fold_constants(m, {{"w", test::varied_tensor({1, 8}, 0.5)}}, prover);
  EXPECT_EQ(f.bindings, 1);  // exp(w) folds; add(e, x) reads x, a run-time input
  ASSERT_EQ(f.folded.count("e"), 1u);
  EXPECT_NEAR(f.folded.at("e").data[0], std::exp(std::sin(0.5)), 1e-6);
}

// A mask from two constant position ranges is larger than they are, yet folds (a bool result
// runs in the VM's f64 path at every call, never in a fused kernel); an f32 broadcast of weights
// to a larger shape still stays at run time.
TEST(FoldConstants, AMaskLargerThanItsOperandsFoldsAFloatBroadcastDoesNot) {
  SymProver prover;
  const Module m = parse_module(R"(module masks
fn main(rows: i64[7, 1], cols: i64[1, 7], given: bool[7, 7], w: f32[1, 8], v: f32[4, 1]) -> tuple(bool[7, 7], f32[4, 8]) {
  dataflow {
    causal = less_equal(cols, rows)
    keep = logical_and(causal, given)
    wide = add(w, v)
    o = tuple(keep, wide)
  }
  return o
}
)",
                                "masks.wmod", prover);
  Tensor<double> rows({7, 1}, 0.0), cols({1, 7}, 0.0);
  for (size_t i = 0; i < 7; ++i) rows.data[i] = cols.data[i] = static_cast<double>(i);
  const FoldResult f = fold_constants(m,
                                      {{"rows", rows},
                                       {"cols", cols},
                                       {"w", test::varied_tensor({1, 8}, 0.5)},
                                       {"v", test::varied_tensor({4, 1}, 1.5)}},
                                      prover);
  EXPECT_EQ(f.bindings, 1);
  ASSERT_EQ(f.folded.count("causal"), 1u);
  EXPECT_EQ(f.folded.count("wide"), 0u);
  const Tensor<double>& causal = f.folded.at("causal");
  ASSERT_EQ(causal.shape, (Shape{7, 7}));
  int ones = 0;
  for (size_t i = 0; i < 7; ++i)
    for (size_t j = 0; j < 7; ++j) {
      EXPECT_EQ(causal.data[i * 7 + j], j <= i ? 1.0 : 0.0) << i << " " << j;
      ones += causal.data[i * 7 + j] != 0;
    }
  EXPECT_EQ(ones, 28);
}

TEST(FoldConstants, AGemmsTransposedWeightIsTransposedOnce) {
  SymProver prover;
  const Module m = parse_module(R"(module gemm
fn main(x: f32[4, 8], w: f32[3, 8]) -> f32[4, 3] {
  dataflow {
    wt = permute(w, perm=[1, 0])
    o = matmul(x, wt)
  }
  return o
}
)",
                                "gemm.wmod", prover);
  const Tensor<double> w = test::varied_tensor({3, 8}, 0.7);
  const FoldResult f = fold_constants(m, {{"w", w}}, prover);
  EXPECT_EQ(f.bindings, 1);
  ASSERT_EQ(f.folded.count("wt"), 1u);
  const Tensor<double>& wt = f.folded.at("wt");
  ASSERT_EQ(wt.shape, (Shape{8, 3}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 8; ++j)  // stored in the weight's f32
      EXPECT_EQ(wt.data[j * 3 + i], static_cast<float>(w.data[i * 8 + j]));
}

}  // namespace
}  // namespace weft
