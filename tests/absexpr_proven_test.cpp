// Tests of AbsExprOracle::proven: a complete oracle proves every candidate the search emits; a
// limited one proves the program itself and not a candidate it merely failed to exclude.
#include <gtest/gtest.h>

#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "search/absexpr_oracle.h"
#include "search/config.h"
#include "tests/search_test_util.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

Graph load_data(const std::string& name) {
  return expand_composites(test::load_graph_file(test::source_path("tests/data/" + name)));
}

TEST(AbsExprOracleProven, ACompleteOracleProvesEveryCandidateTheSearchEmits) {
  Graph g = load_data("rms_norm_linear_small.weft");
  AbsExprOracle oracle(g);
  ASSERT_TRUE(oracle.complete());
  SearchConfig config = SearchConfig::load(test::source_path("tests/data/search_small.json"));
  config.state_budget = 200000;
  int candidates = 0;
  SearchStats stats;
  test::search_candidates(
      g, config,
      [&](Graph&& c) {
        ++candidates;
        EXPECT_TRUE(oracle.proven(c));
        return false;
      },
      stats, &oracle);
  EXPECT_GT(candidates, 0);
}

TEST(AbsExprOracleProven, ALimitedOracleProvesTheProgramButNotWhatItAdmits) {
  Graph g = load_data("rms_norm_linear_small.weft");
  SaturationLimits tiny;
  tiny.max_nodes = 20;
  AbsExprOracle oracle(g, tiny);
  ASSERT_FALSE(oracle.complete());
  EXPECT_TRUE(oracle.proven(g));
  // A graph of the output's type the limited oracle admits, which is not equivalent.
  Graph wrong = parse_graph(
      "program rms_norm_linear_small\ninput X: f16[4, 64]\ninput W: f16[64, 32]\n"
      "O = matmul(X, W)\noutput O\n",
      "wrong");
  ASSERT_EQ(wrong.type(wrong.outputs[0]), g.type(g.outputs[0]));
  EXPECT_TRUE(oracle.equivalent(oracle.input_term(0), 0));  // admitted, like everything
  EXPECT_FALSE(oracle.proven(wrong));
}

}  // namespace
}  // namespace weft
