// The bundled examples stay within their dtypes' range on the inputs `weft run` draws (uniform in
// [-1, 1)), so every backend, which stores intermediates in the program's dtype, gives finite
// results on them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "ir/parser.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

// The largest magnitude of each output of `g` on weft run's inputs for `seed`.
std::vector<double> output_maxima(const Graph& g, uint64_t seed) {
  auto outputs = evaluate_real(g, random_inputs(g, seed), /*f32=*/false);
  std::vector<double> maxima;
  for (const auto& t : outputs) {
    double m = 0;
    for (double v : t.data) m = std::max(m, std::abs(v));
    maxima.push_back(m);
  }
  return maxima;
}

// exp's argument in the attention example is scale(Q K, 1/sqrt(d)): it must stay below ln(65504)
// (f16's largest finite value) with room to spare, while the unscaled Q K would overflow, which
// is why the example scales (and why users' attention does).
TEST(ExampleNumerics, AttentionExpArgumentFitsF16) {
  std::string text = test::read_text(test::example_path("gqa_attention.weft"));
  size_t out = text.find("\noutput O");
  ASSERT_NE(out, std::string::npos) << "the example's output line moved";
  text = text.substr(0, out) + "\noutput S\noutput T\n";
  Graph g = parse_graph(text, "gqa_attention (S, T)");
  const double f16_exp_limit = std::log(65504.0);
  for (uint64_t seed : {0, 11}) {
    auto maxima = output_maxima(g, seed);
    ASSERT_EQ(maxima.size(), 2u);
    EXPECT_GT(maxima[0], f16_exp_limit) << "seed " << seed << ": unscaled Q K fits f16's exp";
    EXPECT_LT(maxima[1], f16_exp_limit / 2) << "seed " << seed << ": scaled Q K too large";
    EXPECT_GT(maxima[1], 0.5) << "seed " << seed << ": trivial scores";
  }
}

}  // namespace
}  // namespace weft
