// Mutation testing of the verifier: every mutant of the (reduced-size) examples that differs from
// the input program is rejected; the ones accepted are equal in f64 (truly equivalent) and listed.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "testing/mutate.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"

WEFT_TEST_TIERS("unit");
// Minutes under ASan at -O0 (runs in the optimized build: make test-heavy).
WEFT_TEST_TIERS_OF("VerifyMutation.EveryNonEquivalentMutantIsRejected", "heavy");

namespace weft {
namespace {

// examples/NAME, or tests/data/NAME for the deeper programs that are not examples.
std::string read_example(const std::string& name) {
  const bool data = name.rfind("qknorm", 0) == 0;
  std::string text =
      test::read_text(data ? test::source_path("tests/data/" + name) : test::example_path(name));
  EXPECT_FALSE(text.empty()) << name;
  return text;
}

// The examples with their long dims shrunk (rms_norm_linear and gated_mlp: 4096 -> 256, 6144 ->
// 384; gqa_attention and qknorm_attention: KV length 4096 -> 128, queries 256 -> 32): every grid
// and loop still divides, scale factors follow the text, and a test costs microseconds.
Graph reduced(const std::string& name) {
  std::string text = read_example(name);
  std::vector<std::pair<std::string, std::string>> dims = {{"4096", "256"}, {"6144", "384"}};
  if (name.rfind("gqa", 0) == 0 || name.rfind("qknorm", 0) == 0)
    dims = {{"4096", "128"}, {"256", "32"}};
  for (const auto& [from, to] : dims)
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
      text.replace(at, from.size(), to);
  return parse_graph(text, name);
}

struct Tally {
  int generated = 0, rejected = 0, accepted = 0, outside_lax = 0, skipped = 0;
  int rejected_seen_in_f64 = 0;  // rejections the float check compared and also found different
  std::vector<std::string> equivalent;
};

void check_mutants(const std::string& example, Tally& tally) {
  const Graph reference = reduced(example + ".weft");
  // Input programs are mutated as written and with composites expanded (more operators).
  for (const char* variant : {".weft", ".expanded", ".fused.weft"}) {
    const std::string v = variant;
    const Graph original = v == ".expanded" ? expand_composites(reduced(example + ".weft"))
                                            : reduced(example + variant);
    if (v == ".expanded" && original == reduced(example + ".weft")) continue;  // no composites
    VerifyOptions o;
    o.seed = 17;
    EquivalenceChecker checker(reference, o);
    ASSERT_EQ(checker.check(original).verdict, Verdict::equivalent) << example << variant;
    for (const Mutant& m : mutants(original)) {
      VerifyResult r;
      try {
        r = checker.check(m.graph);
      } catch (const UserError&) {
        ++tally.skipped;  // changed the output signature or cannot run: not comparable
        continue;
      }
      ++tally.generated;
      ASSERT_TRUE(r.floats || r.verdict == Verdict::error) << m.description;
      const std::string where = example + variant + ": " + m.description;
      if (r.verdict == Verdict::equivalent) {
        ++tally.accepted;
        tally.equivalent.push_back(where);
        EXPECT_TRUE(r.floats->equal_in_f64)
            << "accepted a mutant that differs in f64: " << where << "\n"
            << print_graph(m.graph);
      } else {
        ++tally.rejected;
        if (r.verdict == Verdict::outside_lax) ++tally.outside_lax;
        // Every rejection is a real difference: the float check must see it as well.
        if (r.floats) {
          EXPECT_FALSE(r.floats->equal_in_f64) << "rejected a mutant that agrees in f64 ("
                                               << verdict_name(r.verdict) << "): " << where << "\n"
                                               << print_graph(m.graph);
          tally.rejected_seen_in_f64 += !r.floats->equal_in_f64;
        }
      }
    }
  }
}

TEST(VerifyMutation, EveryNonEquivalentMutantIsRejected) {
  Tally t;
  for (const char* ex : {"rms_norm_linear", "gated_mlp", "gqa_attention", "qknorm_attention"})
    check_mutants(ex, t);
  std::string listed;
  for (const auto& e : t.equivalent) listed += "  " + e + "\n";
  std::printf(
      "mutants: %d generated, %d rejected (%d outside Lax, %d seen to differ in f64), %d accepted "
      "as equivalent (all equal in f64), %d skipped (signature changed)\n%s",
      t.generated, t.rejected, t.outside_lax, t.rejected_seen_in_f64, t.accepted, t.skipped,
      listed.c_str());
  EXPECT_GE(t.generated, 200);
  EXPECT_GT(t.rejected, t.accepted);
  // The cross-check above means something only where the float check ran: a rejection without
  // floats (a verifier error) is not confirmed, so nearly all must have been compared in f64.
  EXPECT_GE(t.rejected_seen_in_f64 * 10, t.rejected * 9)
      << t.rejected - t.rejected_seen_in_f64 << " rejections were never compared in f64";
}

}  // namespace
}  // namespace weft
