// The e-graph mode of the model rewrite (rewrite/model_egraph.h): it finds what the backtracking
// search finds, composes rewrites through multi-result rules, reports its caps as stop reasons,
// never uses a graph the finite-field check rejects, and what it returns computes what the
// original computes on the VM.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "exec/vm.h"
#include "model/deduce.h"
#include "model/parser.h"
#include "model/printer.h"
#include "rewrite/default_rules.h"
#include "rewrite/model_rewrite.h"
#include "tests/rewrite_fixtures.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

const char* const kHandRules = test::kProjectionRules;

// The halves of a matmul by joined weights, added: only rule 1 backwards (the split's items are
// two matmuls) and then rule 0 reach the one matmul by w + v.
const char* kJoined = R"(module joined
sym 1 <= n <= 64

fn main(x: f32[n, 16], w: f32[16, 8], v: f32[16, 8]) -> f32[n, 8] {
  dataflow {
    c = concat(w, v, dim=1)
    m = matmul(x, c)
    parts = split(m, dim=1, parts=2)
    p = item(parts, index=0)
    q = item(parts, index=1)
    o = add(p, q)
  }
  return o
}
)";

const char* const kDist = test::kDistModule;

ModelRewriteOptions egraph_options() {
  ModelRewriteOptions options;
  options.mode = RewriteMode::egraph;
  options.time_budget_s = 0;  // the caps below decide
  return options;
}

VmValue varied(const Shape& shape, double seed) {
  return VmValue{std::make_shared<Tensor<double>>(test::varied_tensor(shape, seed))};
}

// Both modules' main on the same arguments agree (values are stored in f32: reassociated sums
// round differently in the last places).
void expect_same_results(const Module& a, const Module& b, const std::vector<VmValue>& args) {
  const std::vector<double> want = Vm(a).run("main", args).tensor()->data;
  const std::vector<double> got = Vm(b).run("main", args).tensor()->data;
  double largest = 0;
  for (double v : want) largest = std::max(largest, std::abs(v));
  ASSERT_GT(largest, 0.1);  // not a trivially zero result
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * largest) << i;
}

TEST(ModelEGraph, FindsTheDefaultRulesRewritesTheBacktrackingSearchFinds) {
  SymProver prover;
  const Module m = parse_module(kDist, "dist.wmod", prover);
  ModelRewriteOptions backtrack;
  backtrack.time_budget_s = 0;
  const ModelRewriteResult by_search = rewrite_model(m, default_rules(), backtrack, prover);
  const ModelRewriteResult by_egraph = rewrite_model(m, default_rules(), egraph_options(), prover);
  const FunctionRewrite& e = by_egraph.functions.at(0);
  EXPECT_EQ(e.mode, RewriteMode::egraph);
  EXPECT_TRUE(e.used) << rewrite_summary(by_egraph);
  EXPECT_EQ(e.kernels_before, 7);
  EXPECT_EQ(e.kernels_after, 5);
  EXPECT_LE(e.after_s, by_search.functions.at(0).after_s * (1 + 1e-9));
  EXPECT_EQ(e.check.verdict, Verdict::equivalent);
  EXPECT_GT(e.graphs, 14);  // e-nodes: more than the function's own
  EXPECT_GE(e.iterations, 1);
  EXPECT_TRUE(e.stop == StopReason::complete || e.stop == StopReason::converged)
      << stop_reason_name(e.stop);
  EXPECT_NO_THROW(check_module(by_egraph.module, prover));
  expect_same_results(m, by_egraph.module,
                      {varied({5, 64}, 0.3), varied({64, 32}, 1.1), varied({64, 32}, 2.7),
                       varied({5, 32}, 3.9), varied({5, 32}, 5.3)});
}

TEST(ModelEGraph, ComposesAMultiResultRuleBackwardsWithAnother) {
  SymProver prover;
  const Module m = parse_module(kJoined, "joined.wmod", prover);
  const std::vector<Rule> rules = parse_rules(kHandRules, "rules");
  const ModelRewriteResult r = rewrite_model(m, rules, egraph_options(), prover);
  const FunctionRewrite& f = r.functions.at(0);
  ASSERT_TRUE(f.used) << rewrite_summary(r);
  int matmuls = 0, splits = 0;
  for (const Binding& b : r.module.functions[0].blocks[0].bindings) {
    matmuls += b.call.callee == "matmul";
    splits += b.call.callee == "split";
  }
  EXPECT_EQ(matmuls, 1);
  EXPECT_EQ(splits, 0);
  EXPECT_EQ(f.kernels_after, 2);  // add(w, v), then the matmul
  std::set<int> used;
  for (const RewriteStep& s : f.steps) used.insert(s.rule);
  EXPECT_TRUE(used.count(0)) << rewrite_summary(r);
  EXPECT_EQ(f.check.verdict, Verdict::equivalent) << f.check.message;
  EXPECT_NO_THROW(check_module(r.module, prover));
  expect_same_results(m, r.module,
                      {varied({6, 16}, 0.7), varied({16, 8}, 1.9), varied({16, 8}, 3.1)});
}

TEST(ModelEGraph, ItsCapsAreStopReasons) {
  SymProver prover;
  const Module m = parse_module(kDist, "dist.wmod", prover);
  ModelRewriteOptions options = egraph_options();
  options.egraph.max_nodes = 40;
  options.egraph.patience = 0;
  const FunctionRewrite nodes = rewrite_model(m, default_rules(), options, prover).functions.at(0);
  EXPECT_EQ(nodes.stop, StopReason::state_budget);
  options.egraph.max_nodes = 1000000;
  options.egraph.max_iterations = 1;
  const FunctionRewrite rounds = rewrite_model(m, default_rules(), options, prover).functions.at(0);
  EXPECT_EQ(rounds.stop, StopReason::state_budget);
  EXPECT_EQ(rounds.iterations, 1);
  // One round already holds both rewrites.
  EXPECT_EQ(rounds.kernels_after, 5);
  // Rounds grow (round 5 of this function is seconds): without patience the time budget ends it.
  options = egraph_options();
  options.egraph.patience = 0;
  options.time_budget_s = 0.2;
  const FunctionRewrite timed = rewrite_model(m, default_rules(), options, prover).functions.at(0);
  EXPECT_EQ(timed.stop, StopReason::time_budget);
}

TEST(ModelEGraph, AWrongRuleIsCaughtByTheFiniteFieldCheck) {
  SymProver prover;
  const Module m = parse_module(kJoined, "joined.wmod", prover);
  std::string wrong = kHandRules;
  wrong.replace(wrong.find("t0 = add(w, v)"), 14, "t0 = add(w, w)");
  const ModelRewriteResult r =
      rewrite_model(m, parse_rules(wrong, "rules"), egraph_options(), prover);
  const FunctionRewrite& f = r.functions.at(0);
  EXPECT_FALSE(f.used);
  EXPECT_EQ(f.check.verdict, Verdict::not_equivalent);
  EXPECT_NE(f.rejected.find("finite-field check failed"), std::string::npos) << f.rejected;
  EXPECT_EQ(r.module, m);
}

// The extraction reuses a value the function already computes (2 sum(w) for sum(w + w)) and
// drops what nothing reads; the check relates the reused value to the inputs instead of taking
// it as a free input (which would reject the rewrite).
TEST(ModelEGraph, AReusedValueIsCheckedWithItsRelationToTheInputs) {
  SymProver prover;
  const Module m = parse_module(R"(module reuse
sym 1 <= n <= 16

fn main(x: f32[n, 8], w: f32[8, 4]) -> f32[8, 1] {
  dataflow {
    unused = concat(x, x, dim=1)
    s = sum(w, dim=1)
    d = add(w, w)
    t = sum(d, dim=1)
    o = exp(t)
  }
  return o
}
)",
                                "reuse.wmod", prover);
  const ModelRewriteResult r = rewrite_model(m, default_rules(), egraph_options(), prover);
  const FunctionRewrite& f = r.functions.at(0);
  ASSERT_TRUE(f.used) << rewrite_summary(r);
  EXPECT_EQ(f.kernels_after, 3);  // sum(w), its scaling by 2, exp
  EXPECT_EQ(f.check.verdict, Verdict::equivalent) << f.check.message;
  bool reads_s = false;
  for (const Binding& b : r.module.functions[0].blocks[0].bindings)
    for (const std::string& a : b.call.args) reads_s = reads_s || a == "s";
  EXPECT_TRUE(reads_s) << print_module(r.module);
  expect_same_results(m, r.module, {varied({3, 8}, 0.5), varied({8, 4}, 1.5)});
}

// A model-only operator (where) is not an e-node: it reads the rewritten value under its new
// name, and the finite-field check compares only µGraph operators.
TEST(ModelEGraph, AModelOnlyOperatorReadsTheRewrittenValue) {
  SymProver prover;
  const Module m = parse_module(R"(module guarded
sym 1 <= n <= 64

fn main(c: f32[n, 8], q: f32[n, 8], y: f32[n, 8]) -> f32[n, 8] {
  dataflow {
    s = scale(q, factor=1/2)
    t = scale(s, factor=1/2)
    w = where(c, t, y)
    o = exp(w)
  }
  return o
}
)",
                                "guarded.wmod", prover);
  const ModelRewriteResult r = rewrite_model(m, default_rules(), egraph_options(), prover);
  const FunctionRewrite& f = r.functions.at(0);
  ASSERT_TRUE(f.used) << rewrite_summary(r);
  EXPECT_EQ(f.check.verdict, Verdict::equivalent) << f.check.message;
  EXPECT_EQ(f.kernels_after, f.kernels_before - 1);
  EXPECT_NO_THROW(check_module(r.module, prover));
  expect_same_results(m, r.module, {varied({4, 8}, 0.2), varied({4, 8}, 1.2), varied({4, 8}, 2.2)});
}

// The command's default mode: it says what the e-graph held and how it stopped.
TEST(ModelEGraph, TheCommandRewritesWithTheEGraphByDefault) {
  const std::string dir = testing::TempDir();
  const std::string model = dir + "/egraph_dist.wmod", out = dir + "/egraph_dist.out.wmod";
  std::ofstream(model) << kDist;
  auto [code, text] = test::run_weft("model rewrite '" + model + "' -o '" + out + "'");
  ASSERT_EQ(code, 0) << text;
  EXPECT_NE(text.find("7 -> 5 kernels"), std::string::npos) << text;
  EXPECT_NE(text.find("e-nodes in"), std::string::npos) << text;
  EXPECT_NE(text.find("round 1:"), std::string::npos) << text;  // progress on stderr
  EXPECT_NE(text.find("checked by finite field"), std::string::npos) << text;
  SymProver prover;
  EXPECT_NO_THROW(parse_module(test::read_text(out), out, prover));
}

TEST(ModelEGraph, TheModeIsNamedEgraph) {
  EXPECT_EQ(rewrite_mode_from_name("egraph"), RewriteMode::egraph);
  EXPECT_STREQ(rewrite_mode_name(RewriteMode::egraph), "egraph");
  try {
    rewrite_mode_from_name("tensat");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("egraph"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace weft
