// The rule generator at TASO's depth (three operators): the merge of two projections of one input
// (a fused QKV of two) and of two inputs through one weight are among the rules, every stage is
// counted, and each rule holds at fresh sizes. Seconds in the optimized build: the heavy tier.
// The Z3 proofs of all 4,777 rules (a minute on two cores) are a benchmark (docs/rewrites.md);
// here they are sampled: the two merges are proven.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "rewrite/axioms.h"
#include "rewrite/generate.h"
#include "rewrite/prove.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "heavy");

namespace weft {
namespace {

TEST(RuleGeneratorDepthThree, FindsTheMergedProjections) {
  GenerateOptions options;
  options.depth = 3;
  options.prove = false;
  const GenerateResult r = generate_rules(default_input_pool(), options, Budget());
  ASSERT_EQ(r.stop, StopReason::complete);
  EXPECT_GT(r.counts.candidates, r.counts.after_renaming);
  EXPECT_GT(r.counts.after_renaming, r.counts.after_common);
  EXPECT_EQ(r.counts.rejected, 0);
  EXPECT_EQ(r.counts.finite_field, static_cast<int64_t>(r.rules.size()));
  auto found = [&](const std::vector<std::string>& source, const std::vector<std::string>& target) {
    return std::any_of(r.rules.begin(), r.rules.end(), [&](const Rule& rule) {
      auto has = [](const std::vector<std::string>& side, const std::vector<std::string>& lines) {
        return std::all_of(lines.begin(), lines.end(), [&](const std::string& l) {
          return std::find(side.begin(), side.end(), l) != side.end();
        });
      };
      return has(rule.source, source) && has(rule.target, target) &&
             prove_rule(rule, axioms()).verdict == ProofVerdict::proven;
    });
  };
  EXPECT_TRUE(found({"t0 = concat(w, v, dim=1)", "t1 = matmul(b, t0)"},
                    {"t0 = matmul(b, v)", "t1 = matmul(b, w)"}));
  EXPECT_TRUE(found({"t0 = concat(a, b, dim=0)", "t1 = matmul(t0, v)"},
                    {"t0 = matmul(b, v)", "t1 = matmul(a, v)"}));
}

}  // namespace
}  // namespace weft
