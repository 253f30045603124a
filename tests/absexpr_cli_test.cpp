// End-to-end tests of `weft absexpr`: printing expressions and answering oracle questions.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace {

using weft::test::example_path;
using Cli = std::pair<int, std::string>;

Cli run(const std::string& args) {
  return weft::test::run_weft(args);
}

std::string example(const char* name) {
  return example_path(name);
}

TEST(AbsexprCli, PrintsEachOutputsExpression) {
  auto [rc, out] = run("absexpr " + example("gated_mlp.fused.weft"));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "O = (mul (silu (sum 16 (sum 256 (mul X W1)))) (sum 16 (sum 256 (mul X W2))))\n");
}

TEST(AbsexprCli, AnswersTheOracleQuestion) {
  std::string file = example("rms_norm_linear.weft");
  struct Q {
    const char* term;
    const char* verdict;
  } qs[] = {
      {"'(exp X)'", ": not viable\n"},
      {"'(sum 64 (mul W X))'", ": viable\n"},
      {"'(div (sum 16 (sum 256 (mul X W))) (sqrt (add (sum 4096 (mul X X)) (const))))'",
       ": equivalent\n"},
  };
  for (const Q& q : qs) {
    auto [rc, out] = run("absexpr " + file + " --viable " + q.term);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("saturated"), std::string::npos) << out;
    ASSERT_GE(out.size(), std::string(q.verdict).size());
    EXPECT_EQ(out.substr(out.size() - std::string(q.verdict).size()), q.verdict) << out;
  }
}

TEST(AbsexprCli, ListsAxiomsAndRejectsBadInput) {
  auto [rc, out] = run("absexpr " + example("rms_norm_linear.weft") + " --axioms");
  EXPECT_EQ(rc, 0) << out;
  for (const char* s : {"A_eq add-comm", "A_eq sum-split-4096=16x256", "A_sub operand"})
    EXPECT_NE(out.find(s), std::string::npos) << s << " missing in:\n" << out;
  EXPECT_EQ(run("absexpr " + example("rms_norm_linear.weft") + " --viable '(add X'").first, 1);
  EXPECT_EQ(run("absexpr " + example("rms_norm_linear.weft") + " --viable X --output Z").first, 1);
  EXPECT_EQ(run("absexpr no_such_file.weft").first, 1);
}

}  // namespace
