// End-to-end tests of verify_equivalent: the fused examples at full size, verdicts, output
// matching, the Lax check, zero divisors, the cache and the CLI.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"
#include "verify/field_domain.h"
#include "verify/fingerprint_cache.h"
#include "verify/float_check.h"

WEFT_TEST_TIERS("unit");
// Minutes under ASan at -O0 (runs in the optimized build: make test-heavy).
WEFT_TEST_TIERS_OF("Verify.DeeperProgramsReachTheTargetAtFullSize", "heavy");

namespace weft {
namespace {

std::string read_example(const std::string& name) {
  std::string text = test::read_text(test::example_path(name));
  EXPECT_FALSE(text.empty()) << name;
  return text;
}

Graph example(const std::string& name) {
  return parse_graph(read_example(name), name);
}

// The example with 4096 -> 256 and 6144 -> 384 (grids and loops still divide).
std::string reduced_text(const std::string& name) {
  std::string text = read_example(name);
  for (auto [from, to] : {std::pair<std::string, std::string>{"4096", "256"}, {"6144", "384"}})
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
      text.replace(at, from.size(), to);
  return text;
}
Graph parse(const std::string& text) {
  return parse_graph(text, "<test>");
}

class FusedExamples : public ::testing::TestWithParam<const char*> {};

TEST_P(FusedExamples, AreEquivalentToTheirInputProgramsAtFullSize) {
  const std::string name = GetParam();
  Graph a = example(name + ".weft"), b = example(name + ".fused.weft");
  VerifyResult r = verify_equivalent(a, b);
  ASSERT_EQ(r.verdict, Verdict::equivalent) << r.message;
  EXPECT_LE(r.bound, std::ldexp(1.0, -60));
  EXPECT_GT(r.per_test_bound, 0);
  EXPECT_EQ(r.tests_run, r.tests_needed);
  ASSERT_TRUE(r.floats);
  EXPECT_TRUE(r.floats->acceptable);
  ASSERT_EQ(r.floats->outputs.size(), 1u);
  EXPECT_GT(r.floats->outputs[0].f32.max_ref, 0) << "outputs must not be all zero";
}

INSTANTIATE_TEST_SUITE_P(Verify, FusedExamples,
                         ::testing::Values("rms_norm_linear", "gated_mlp", "gqa_attention"));

// Deeper programs (issue 13): QK-norm attention (two norms before an exp; its per-test bound used
// to exceed 1 because every exp of the tensor was counted) and nGPT's normalized update, against
// themselves, their expanded forms and a hand-fused QK-norm attention kernel, at full size.
TEST(Verify, DeeperProgramsReachTheTargetAtFullSize) {
  const Graph qk = test::load_graph_file(test::source_path("tests/data/qknorm_attention.weft"));
  const Graph qk_fused =
      test::load_graph_file(test::source_path("tests/data/qknorm_attention.fused.weft"));
  const Graph nt = test::load_graph_file(test::source_path("tests/data/ntrans.weft"));
  VerifyOptions o;
  o.float_check = false;
  for (const auto& [a, b] :
       std::vector<std::pair<const Graph*, Graph>>{{&qk, qk},
                                                   {&qk, expand_composites(qk)},
                                                   {&qk, qk_fused},
                                                   {&nt, nt},
                                                   {&nt, expand_composites(nt)}}) {
    VerifyResult r = verify_equivalent(*a, b, o);
    ASSERT_EQ(r.verdict, Verdict::equivalent) << a->name << " vs " << b.name << ": " << r.message;
    EXPECT_LE(r.bound, std::ldexp(1.0, -60)) << a->name;
    EXPECT_LT(r.per_test_bound, std::ldexp(1.0, -10)) << a->name << " vs " << b.name;
  }
  // The same fused kernel with K normalized over its KV dim instead of its head dim is rejected.
  std::string text = test::read_text(test::source_path("tests/data/qknorm_attention.fused.weft"));
  const std::string from = "km = mean(kk, dim=1)";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "km = mean(kk, dim=2)");
  EXPECT_EQ(verify_equivalent(qk, parse(text), o).verdict, Verdict::not_equivalent);
}

const char* kTwoOutputs = R"(input X: f32[4, 6]
input W: f32[6, 5]
M = matmul(X, W)
S = sum(M, dim=1)
output M
output S
)";

TEST(Verify, ReportsTheFirstDifferingOutputAndElement) {
  Graph a = parse(kTwoOutputs);
  Graph b = parse(R"(input X: f32[4, 6]
input W: f32[6, 5]
M = matmul(X, W)
S = max(M, dim=1)
output M
output S
)");
  VerifyResult r = verify_equivalent(a, b);
  ASSERT_EQ(r.verdict, Verdict::not_equivalent);
  EXPECT_EQ(r.output, 1);
  EXPECT_EQ(r.element, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(r.tests_run, 1);
  ASSERT_TRUE(r.floats);
  EXPECT_FALSE(r.floats->acceptable);
}

TEST(Verify, AcceptsReassociationAndDistributivity) {
  Graph a = parse(
      "input X: f32[3, 4]\ninput Y: f32[3, 4]\ninput Z: f32[3, 4]\n"
      "A = add(X, Y)\nO = mul(A, Z)\noutput O\n");
  Graph b = parse(
      "input X: f32[3, 4]\ninput Y: f32[3, 4]\ninput Z: f32[3, 4]\n"
      "A = mul(Z, X)\nB = mul(Y, Z)\nO = add(A, B)\noutput O\n");
  VerifyResult r = verify_equivalent(a, b);
  EXPECT_EQ(r.verdict, Verdict::equivalent);
  EXPECT_EQ(r.tests_run, 2);
  EXPECT_LE(r.bound, std::ldexp(1.0, -60));
}

TEST(Verify, MismatchedSignaturesAreUserErrors) {
  Graph a = parse(kTwoOutputs);
  Graph one_output = parse("input X: f32[4, 6]\ninput W: f32[6, 5]\nM = matmul(X, W)\noutput M\n");
  Graph other_input = parse(
      "input X: f32[4, 6]\ninput W: f32[6, 4]\nM = matmul(X, W)\nS = sum(M, dim=1)\noutput M\n"
      "output S\n");
  EXPECT_THROW(verify_equivalent(a, one_output), UserError);
  EXPECT_THROW(verify_equivalent(a, other_input), UserError);
}

TEST(Verify, DoubleExponentialIsOutsideLax) {
  Graph a = parse("input X: f32[2, 3]\nE = exp(X)\nF = exp(E)\noutput F\n");
  Graph b = parse("input X: f32[2, 3]\nE = exp(X)\nF = exp(E)\noutput F\n");
  VerifyResult r = verify_equivalent(a, b);
  EXPECT_EQ(r.verdict, Verdict::outside_lax);
  EXPECT_NE(r.message.find("already depends on an exp"), std::string::npos) << r.message;
  // One exp per path is fine, even twice in sequence on different paths.
  Graph c = parse("input X: f32[2, 3]\nE = exp(X)\nS = sqrt(E)\nF = exp(S)\noutput F\n");
  EXPECT_EQ(verify_equivalent(c, c).verdict, Verdict::equivalent);
}

TEST(Verify, ExpIdentitiesAndUninterpretedFunctions) {
  // exp(x + y) = exp(x) * exp(y) holds; sqrt(x) * sqrt(y) = sqrt(x * y) is not assumed.
  Graph a = parse("input X: f32[2, 3]\ninput Y: f32[2, 3]\nS = add(X, Y)\nE = exp(S)\noutput E\n");
  Graph b = parse(
      "input X: f32[2, 3]\ninput Y: f32[2, 3]\nA = exp(X)\nB = exp(Y)\n"
      "E = mul(A, B)\noutput E\n");
  EXPECT_EQ(verify_equivalent(a, b).verdict, Verdict::equivalent);
  Graph c = parse(
      "input X: f32[2, 3]\ninput Y: f32[2, 3]\nA = sqrt(X)\nB = sqrt(Y)\n"
      "E = mul(A, B)\noutput E\n");
  Graph d = parse("input X: f32[2, 3]\ninput Y: f32[2, 3]\nM = mul(X, Y)\nE = sqrt(M)\noutput E\n");
  VerifyOptions no_float;
  no_float.float_check = false;
  EXPECT_EQ(verify_equivalent(c, d, no_float).verdict, Verdict::not_equivalent);
}

TEST(Verify, IdenticallyZeroDivisorIsAnErrorNotAHang) {
  Graph a = parse("input X: f32[2, 3]\nZ = sub(X, X)\nD = div(X, Z)\noutput D\n");
  VerifyOptions o;
  o.float_check = false;
  VerifyResult r = verify_equivalent(a, a, o);
  EXPECT_EQ(r.verdict, Verdict::error);
  EXPECT_EQ(r.tests_discarded, o.max_discards + 1);
}

TEST(Verify, DeterministicForASeedAndTheCacheIsShared) {
  Graph a = parse(reduced_text("rms_norm_linear.weft"));
  VerifyOptions o;
  o.float_check = false;
  EquivalenceChecker checker(a, o);
  Graph b = parse(reduced_text("rms_norm_linear.fused.weft"));
  VerifyResult r1 = checker.check(b);
  const int64_t hits1 = checker.cache().hits(), misses1 = checker.cache().misses();
  VerifyResult r2 = checker.check(b);
  EXPECT_EQ(r1.verdict, Verdict::equivalent);
  EXPECT_EQ(r2.verdict, Verdict::equivalent);
  EXPECT_EQ(r1.bound, r2.bound);
  EXPECT_EQ(r1.tests_run, r2.tests_run);
  // The second check finds every fingerprint (the target's and the candidate's) in the cache.
  EXPECT_GT(checker.cache().hits(), hits1);
  EXPECT_EQ(checker.cache().misses(), misses1);
  // The target against itself never evaluates anything new.
  const int64_t before = checker.cache().misses();
  EXPECT_EQ(checker.check(a).verdict, Verdict::equivalent);
  EXPECT_EQ(checker.cache().misses(), before);
}

// A give-up time that has passed: the check ends at once with no verdict, and a test cut inside
// (at its first op) leaves the shared cache holding only whole, correct results.
TEST(Verify, ACheckGivesUpAtItsGiveUpTimeAndLeavesTheCacheValid) {
  using Clock = std::chrono::steady_clock;
  Graph a = parse(reduced_text("rms_norm_linear.weft"));
  Graph b = parse(reduced_text("rms_norm_linear.fused.weft"));
  VerifyOptions o;
  o.float_check = false;
  EquivalenceChecker checker(a, o);
  VerifyResult cut = checker.check(b, Clock::now());
  EXPECT_EQ(cut.verdict, Verdict::abandoned);
  EXPECT_EQ(cut.tests_run, 0);
  EXPECT_FALSE(cut.floats.has_value());

  auto cache = std::make_shared<FingerprintCache>();
  const auto params = FieldTestParams::draw(7, 1);
  FieldDomain<FieldP> late(params);
  late.set_give_up_at(Clock::now() - std::chrono::seconds(1));
  EXPECT_THROW(field_fingerprints<FieldP>(b, late, cache.get()), EvaluationAbandoned);
  std::vector<FieldP> dummy(4);
  EXPECT_THROW(late.matmul(dummy.data(), dummy.data(), dummy.data(), 2, 2, 2), EvaluationAbandoned);
  FieldDomain<FieldP> on_time(params);
  std::vector<Tensor<FieldP>> with_cache = field_fingerprints<FieldP>(b, on_time, cache.get());
  std::vector<Tensor<FieldP>> fresh = field_fingerprints<FieldP>(b, on_time, nullptr);
  ASSERT_EQ(with_cache.size(), fresh.size());
  for (size_t i = 0; i < fresh.size(); ++i) {
    ASSERT_EQ(with_cache[i].data.size(), fresh[i].data.size());
    bool nontrivial = false;
    for (size_t e = 0; e < fresh[i].data.size(); ++e) {
      EXPECT_EQ(with_cache[i].data[e].p, fresh[i].data[e].p);
      nontrivial = nontrivial || fresh[i].data[e].p != fresh[i].data[0].p;
    }
    EXPECT_TRUE(nontrivial) << "output " << i << " is constant: the comparison proves nothing";
  }
  // The float check's evaluations give up the same way.
  const FloatReference floats = float_reference(a, 3);
  EXPECT_THROW(float_check(floats, b, GiveUpAt{Clock::now() - std::chrono::seconds(1)}),
               EvaluationAbandoned);
  EXPECT_TRUE(float_check(floats, b).acceptable);
  // Abandoned checks leave no trace: the same verdict as a checker that never gave up.
  VerifyResult after = checker.check(b);
  VerifyResult reference = EquivalenceChecker(a, o).check(b);
  EXPECT_EQ(after.verdict, Verdict::equivalent);
  EXPECT_EQ(after.tests_run, reference.tests_run);
  EXPECT_EQ(after.bound, reference.bound);
}

TEST(FingerprintCache, KeptEntriesEvictIntermediatesWhenFull) {
  auto tensor = [](int64_t n, uint64_t fill) {
    return std::make_shared<const Tensor<FieldP>>(Shape{n}, FieldP{fill});
  };
  FingerprintCache cache(/*capacity_bytes=*/4 * 8 * 8);  // four tensors of 8 residues
  for (uint64_t h = 0; h < 4; ++h) cache.insert<FieldP>(1, h, tensor(8, h));
  EXPECT_EQ(cache.bytes(), 4 * 8 * 8);
  // Full: an intermediate is not cached, ...
  cache.insert<FieldP>(1, 10, tensor(8, 10));
  EXPECT_EQ(cache.find<FieldP>(1, 10), nullptr);
  // ... a kept entry takes the place of intermediates, and kept entries are never evicted.
  cache.insert<FieldP>(1, 11, tensor(16, 11), /*keep=*/true);
  ASSERT_NE(cache.find<FieldP>(1, 11), nullptr);
  EXPECT_EQ(cache.find<FieldP>(1, 11)->data[3].p, 11u);
  int left = 0;
  for (uint64_t h = 0; h < 4; ++h) left += cache.find<FieldP>(1, h) != nullptr;
  EXPECT_EQ(left, 2);
  cache.insert<FieldP>(1, 12, tensor(32, 12), /*keep=*/true);
  EXPECT_EQ(cache.find<FieldP>(1, 12), nullptr);  // would need evicting a kept one
  EXPECT_NE(cache.find<FieldP>(1, 11), nullptr);
  EXPECT_LE(cache.bytes(), 4 * 8 * 8);
}

// A cache with room for one test's worth of the target: later tests' inputs and target outputs
// evict earlier intermediates, so after the check the target's outputs of every test are still
// cached and comparing the target with itself evaluates nothing (before, the first test's
// intermediates filled the cache and the target was evaluated again for every later candidate).
TEST(Verify, TargetOutputsOutliveItsIntermediatesInASmallCache) {
  Graph a = parse(
      "input X: f32[256, 1]\ninput Y: f32[1, 256]\nP = mul(X, Y)\nQ = scale(P, factor=1/2)\n"
      "S = sum(Q, dim=1)\noutput S\n");
  Graph b = parse(
      "input X: f32[256, 1]\ninput Y: f32[1, 256]\nT = sum(Y, dim=1)\nU = mul(X, T)\n"
      "S = scale(U, factor=1/2)\noutput S\n");
  VerifyOptions o;
  o.float_check = false;
  o.threads = 1;
  o.target_error = std::ldexp(1.0, -300);  // several tests
  int64_t one_test = 0;
  for (const Value& v : a.values) one_test += numel(v.type.shape) * int64_t{sizeof(FieldP)};
  auto cache = std::make_shared<FingerprintCache>(one_test);
  EquivalenceChecker checker(a, o, cache);
  VerifyResult first = checker.check(b);
  ASSERT_EQ(first.verdict, Verdict::equivalent);
  ASSERT_GE(first.tests_run, 3);
  const int64_t misses = cache->misses();
  EXPECT_EQ(checker.check(a).verdict, Verdict::equivalent);
  EXPECT_EQ(cache->misses(), misses);
  EXPECT_LE(cache->bytes(), one_test);
}

int run_cli(const std::string& args, std::string* out) {
  int rc = 0;
  std::tie(rc, *out) = test::run_weft(args);
  return rc;
}

TEST(VerifyCli, ExitCodesAndMessages) {
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + name) << text;
    return dir + name;
  };
  const std::string a = write("verify_cli_a.weft", reduced_text("rms_norm_linear.weft"));
  const std::string b = write("verify_cli_b.weft", reduced_text("rms_norm_linear.fused.weft"));
  // The division by the RMS dropped.
  const std::string c = write("verify_cli_c.weft",
                              "input X: f16[16, 256]\ninput W: f16[256, 384]\nO = matmul(X, W)\n"
                              "output O\n");
  std::string out;
  EXPECT_EQ(run_cli("verify " + a + " " + b + " --seed 5 --threads 1", &out), 0) << out;
  EXPECT_NE(out.find("equivalent (bound 2^-"), std::string::npos) << out;
  EXPECT_NE(out.find("after 2 tests)"), std::string::npos) << out;
  EXPECT_NE(out.find("numerically acceptable"), std::string::npos) << out;
  EXPECT_EQ(run_cli("verify " + a + " " + c, &out), 3) << out;
  EXPECT_NE(out.find("NOT equivalent: output 0 (O) differs at element [0, 0]"), std::string::npos)
      << out;
  EXPECT_NE(out.find("NOT numerically acceptable"), std::string::npos) << out;
  // A looser target needs fewer tests.
  EXPECT_EQ(run_cli("verify " + a + " " + b + " --target-error 1e-6", &out), 0) << out;
  EXPECT_NE(out.find("after 1 test)"), std::string::npos) << out;
  // User errors: a missing file, a different signature.
  EXPECT_EQ(run_cli("verify " + a + " " + dir + "nonexistent.weft", &out), 1);
  const std::string d = write("verify_cli_d.weft", "input X: f16[16, 256]\noutput X\n");
  EXPECT_EQ(run_cli("verify " + a + " " + d, &out), 1) << out;
}

}  // namespace
}  // namespace weft
