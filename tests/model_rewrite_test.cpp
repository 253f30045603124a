// Rules applied to model functions (rewrite/model_*.h): a rule over [n, m] matches tensors with
// leading dims, intermediate values read elsewhere block a match, multi-result rules deduce
// through tuples, the search picks the cheaper graph, a wrong rule is caught by the finite-field
// check, and the rewritten function computes what the original does on the VM.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <string>

#include "core/target.h"
#include "exec/vm.h"
#include "model/deduce.h"
#include "model/parser.h"
#include "rewrite/default_rules.h"
#include "rewrite/model_apply.h"
#include "rewrite/model_match.h"
#include "rewrite/model_rewrite.h"
#include "rewrite/pattern.h"
#include "tests/rewrite_fixtures.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

const char* const kRules = test::kProjectionRules;

// Two projections of x added, batched: the rule's [n, m] matches [b, n, 64] (one leading dim).
const char* kBatched = R"(module batched
sym 1 <= b <= 8, 1 <= n <= 64

fn main(x: f32[b, n, 16], w1: f32[1, 16, 8], w2: f32[1, 16, 8], c: f32[b, n, 8]) -> f32[b, n, 8] {
  dataflow {
    p = matmul(x, w1)
    q = matmul(x, w2)
    s = add(p, q)
    o = mul(s, c)
  }
  return o
}
)";

Module parse(const std::string& text, SymProver& prover) {
  return parse_module(text, "test.wmod", prover);
}

VmValue varied(const Shape& shape, double seed) {
  return VmValue{std::make_shared<Tensor<double>>(test::varied_tensor(shape, seed))};
}

std::vector<double> run_main(const Module& m, const std::vector<VmValue>& args) {
  Vm vm(m);
  return vm.run("main", args).tensor()->data;
}

// The first match of `rule`'s source in `m`'s first function replaced by its target; nullopt when
// there is no match or it does not apply.
std::optional<AppliedRewrite> apply_first_match(const Module& m, const Rule& rule,
                                                SymProver& prover) {
  const Function& f = m.functions[0];
  const FunctionIndex index = index_function(f);
  const std::vector<RewriteMatch> found = find_matches(f, index, rule_pattern(rule, false), prover);
  if (found.empty()) return std::nullopt;
  int fresh = 0;
  return apply_match(f, index, found[0], rule_pattern(rule, true), prover, fresh);
}

// TASO's backtracking search (these tests are of it; the e-graph's are in model_egraph_test).
ModelRewriteOptions backtracking() {
  ModelRewriteOptions options;
  options.mode = RewriteMode::backtrack;
  return options;
}

// `m` with its first function replaced by `f`.
Module with_function(Module m, const Function& f) {
  m.functions[0] = f;
  return m;
}

TEST(ModelRewrite, ARankTwoRuleMatchesTensorsWithLeadingDims) {
  SymProver prover;
  const Module m = parse(kBatched, prover);
  const std::vector<Rule> rules = parse_rules(kRules, "rules");
  const Function& f = m.functions[0];
  const FunctionIndex index = index_function(f);
  const std::vector<RewriteMatch> found =
      find_matches(f, index, rule_pattern(rules[0], false), prover);
  ASSERT_EQ(found.size(), 2u);  // add commutes: (x w1) + (x w2) and (x w2) + (x w1)
  EXPECT_EQ(found[1].inputs, (std::vector<std::string>{"x", "w2", "w1"}));
  EXPECT_EQ(found[0].lift, 1);
  EXPECT_EQ(found[0].inputs, (std::vector<std::string>{"x", "w1", "w2"}));
  EXPECT_EQ(found[0].outputs, (std::vector<std::string>{"s"}));
  int fresh = 0;
  auto applied = apply_match(f, index, found[0], rule_pattern(rules[0], true), prover, fresh);
  ASSERT_TRUE(applied);
  EXPECT_NO_THROW(check_module(with_function(m, applied->function), prover));
  ASSERT_EQ(applied->function.blocks[0].bindings.size(), 3u);
  EXPECT_EQ(applied->function.blocks[0].bindings[0].call.callee, "add");
  EXPECT_EQ(applied->function.blocks[0].bindings[1].var, "s");
}

TEST(ModelRewrite, AnIntermediateReadOutsideTheMatchBlocksIt) {
  SymProver prover;
  std::string text = kBatched;
  text.replace(text.find("o = mul(s, c)"), 13, "o = mul(s, p)");
  const Module m = parse(text, prover);
  const std::vector<Rule> rules = parse_rules(kRules, "rules");
  const Function& f = m.functions[0];
  EXPECT_TRUE(find_matches(f, index_function(f), rule_pattern(rules[0], false), prover).empty());
}

// Rules hold over the reals: on integer tensors (stored truncated and wrapped) no rule matches.
TEST(ModelRewrite, IntegerTensorsAreNeverRewritten) {
  SymProver prover;
  std::string text = kBatched;
  for (size_t at = text.find("f32["); at != std::string::npos; at = text.find("f32[", at))
    text.replace(at, 3, "i64");
  const Module m = parse(text, prover);
  const std::vector<Rule> rules = parse_rules(kRules, "rules");
  const Function& f = m.functions[0];
  ASSERT_EQ(f.params[0].type.dtype, DType::i64);
  for (const Rule& rule : rules)
    EXPECT_TRUE(find_matches(f, index_function(f), rule_pattern(rule, false), prover).empty());
}

TEST(ModelRewrite, AMultiResultRuleBindsItsResultsAsItemsOfATuple) {
  SymProver prover;
  const Module m = parse(kBatched, prover);
  const std::vector<Rule> rules = parse_rules(kRules, "rules");
  const Function& f = m.functions[0];
  ASSERT_FALSE(find_matches(f, index_function(f), rule_pattern(rules[1], false), prover).empty());
  auto applied = apply_first_match(m, rules[1], prover);
  ASSERT_TRUE(applied);
  EXPECT_NO_THROW(check_module(with_function(m, applied->function), prover));
  int matmuls = 0, items = 0;
  for (const Binding& b : applied->function.blocks[0].bindings) {
    matmuls += b.call.callee == "matmul";
    items += b.call.kind == CallKind::item;
  }
  EXPECT_EQ(matmuls, 1);
  EXPECT_EQ(items, 2);
  const RewriteCheck check =
      check_rewritten_function(f, applied->function, applied->renamed, {{"b", 2}, {"n", 5}}, 1);
  EXPECT_EQ(check.verdict, Verdict::equivalent) << check.message;
  EXPECT_EQ(check.changed, 2);
}

TEST(ModelRewrite, TheSearchTakesTheCheaperGraphAndItComputesTheSame) {
  SymProver prover;
  const Module m = parse(kBatched, prover);
  ModelRewriteOptions options = backtracking();
  options.target = "h100";
  const ModelRewriteResult r = rewrite_model(m, parse_rules(kRules, "rules"), options, prover);
  ASSERT_EQ(r.functions.size(), 1u);
  const FunctionRewrite& f = r.functions[0];
  ASSERT_EQ(f.steps.size(), 1u) << rewrite_summary(r);
  EXPECT_EQ(f.steps[0].rule, 0);
  EXPECT_LT(f.after_s, f.before_s);
  EXPECT_EQ(f.kernels_before, 4);
  EXPECT_EQ(f.kernels_after, 3);
  EXPECT_EQ(f.check.verdict, Verdict::equivalent);
  EXPECT_NO_THROW(check_module(r.module, prover));
  const std::vector<VmValue> args = {varied({2, 5, 16}, 0.1), varied({1, 16, 8}, 1.3),
                                     varied({1, 16, 8}, 2.9), varied({2, 5, 8}, 4.4)};
  const std::vector<double> want = run_main(m, args), got = run_main(r.module, args);
  double largest = 0;
  for (double v : want) largest = std::max(largest, std::abs(v));
  ASSERT_GT(largest, 0.1);  // not a trivially zero result
  ASSERT_EQ(got.size(), want.size());
  // Values are stored in f32: the reassociated sum rounds differently in the last place.
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

TEST(ModelRewrite, AWrongRuleIsCaughtByTheFiniteFieldCheck) {
  SymProver prover;
  const Module m = parse(kBatched, prover);
  std::string wrong = kRules;
  wrong.replace(wrong.find("t0 = add(w, v)"), 14, "t0 = add(w, w)");
  ModelRewriteOptions options = backtracking();
  options.target = "h100";
  const ModelRewriteResult r = rewrite_model(m, parse_rules(wrong, "rules"), options, prover);
  const FunctionRewrite& f = r.functions[0];
  EXPECT_TRUE(f.steps.empty());
  EXPECT_EQ(f.check.verdict, Verdict::not_equivalent);
  EXPECT_NE(f.rejected.find("finite-field check failed"), std::string::npos) << f.rejected;
  EXPECT_EQ(r.module, m);
}

TEST(ModelRewrite, TheDefaultRulesRewriteDistributivityAndExponentials) {
  SymProver prover;
  const Module m = parse(test::kDistModule, prover);
  ASSERT_GT(default_rules().size(), 1000u);
  const ModelRewriteResult r = rewrite_model(m, default_rules(), backtracking(), prover);
  const FunctionRewrite& f = r.functions[0];
  EXPECT_EQ(f.steps.size(), 2u) << rewrite_summary(r);
  EXPECT_EQ(f.kernels_before, 7);
  EXPECT_EQ(f.kernels_after, 5);
  EXPECT_EQ(f.stop, StopReason::complete);
  EXPECT_EQ(f.check.verdict, Verdict::equivalent);
}

// Exported attention scales q and k by d^-1/4 each; the generated rule for factor 2 read with 1/2
// moves both scalings onto one operand (a kernel less), checked to hold for 1/2 first.
TEST(ModelRewrite, RuleConstantsMatchPowersOfAnotherConstant) {
  SymProver prover;
  const Module m = parse(R"(module sc
sym 1 <= b <= 8, 1 <= s <= 64

fn main(q: f32[b, 2, s, 16], k: f32[b, 2, 16, s]) -> f32[b, 2, s, s] {
  dataflow {
    q2 = scale(q, factor=1/2)
    k2 = scale(k, factor=1/2)
    m = matmul(q2, k2)
  }
  return m
}
)",
                         prover);
  const ModelRewriteResult r = rewrite_model(m, default_rules(), backtracking(), prover);
  const FunctionRewrite& f = r.functions[0];
  ASSERT_EQ(f.steps.size(), 1u) << rewrite_summary(r);
  EXPECT_EQ(f.kernels_after, 2);
  EXPECT_EQ(f.check.verdict, Verdict::equivalent);
  const std::vector<Binding>& bs = r.module.functions[0].blocks[0].bindings;
  ASSERT_EQ(bs.size(), 2u);
  EXPECT_EQ(bs[0].call.callee, "scale");
  EXPECT_EQ(std::get<Rational>(bs[0].call.attrs.at("factor")), *Rational::make(1, 4));
}

TEST(ModelRewrite, ModeNoneLeavesTheModuleAndAnUnknownModeIsAnError) {
  SymProver prover;
  const Module m = parse(kBatched, prover);
  ModelRewriteOptions options;
  options.mode = RewriteMode::none;
  EXPECT_EQ(rewrite_model(m, parse_rules(kRules, "rules"), options, prover).module, m);
  EXPECT_THROW(rewrite_mode_from_name("egraphs"), UserError);
}

// Applied over leading dims, the other side of a rule can need a shape condition the source did
// not: concatenating weights of leading dims 1 and b needs b == 1, which the prover cannot show
// for 1 <= b <= 8, so the merged projection is not applied there (it would be a run-time check);
// with equal leading dims it is.
TEST(ModelRewrite, AnUnprovableShapeConditionMeansTheRewriteIsNotApplied) {
  const std::vector<Rule> rules = parse_rules(kRules, "rules");
  for (const char* first : {"1", "b"}) {
    SCOPED_TRACE(first);
    SymProver prover;
    const Module m = parse(fmt::format(R"(module lead
sym 1 <= b <= 8, 1 <= n <= 64

fn main(x: f32[b, n, 16], w1: f32[{}, 16, 8], w2: f32[b, 16, 8]) -> f32[b, n, 8] {{
  dataflow {{
    p = matmul(x, w1)
    q = matmul(x, w2)
    o = mul(p, q)
  }}
  return o
}}
)",
                                       first),
                           prover);
    const Function& f = m.functions[0];
    ASSERT_FALSE(find_matches(f, index_function(f), rule_pattern(rules[1], false), prover).empty());
    EXPECT_EQ(apply_first_match(m, rules[1], prover).has_value(), std::string(first) == "b");
  }
}

TEST(ModelRewrite, TheCommandWritesTheRewrittenModuleAndSaysWhatItDid) {
  const std::string dir = testing::TempDir();
  const std::string model = dir + "/rewrite_batched.wmod", rules = dir + "/rewrite_two.rules",
                    out = dir + "/rewrite_batched.out.wmod";
  std::ofstream(model) << kBatched;
  std::ofstream(rules) << kRules;
  auto [code, text] = test::run_weft("model rewrite '" + model + "' --rules '" + rules +
                                     "' --mode backtrack --target h100 -o '" + out + "'");
  ASSERT_EQ(code, 0) << text;
  EXPECT_NE(text.find("fn main: 1 rewrite(s) (rule 0 at p), 4 -> 3 kernels"), std::string::npos)
      << text;
  SymProver prover;
  const Module m = parse(test::read_text(out), prover);
  int matmuls = 0;
  for (const Binding& b : m.functions[0].blocks[0].bindings) matmuls += b.call.callee == "matmul";
  EXPECT_EQ(matmuls, 1);
  // A bad rule file is an error at its line, not a crash.
  std::ofstream(rules) << "rule 0 proven from hand\ninput a: [n, m]\nsource\n  t0 = frob(a)\n";
  auto [bad, message] = test::run_weft("model rewrite '" + model + "' --rules '" + rules + "'");
  EXPECT_EQ(bad, 1);
  EXPECT_NE(message.find(rules + ":4:"), std::string::npos) << message;
}

}  // namespace
}  // namespace weft
