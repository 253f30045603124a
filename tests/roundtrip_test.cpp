// Property tests of the text format: parse(print(g)) == g on every example and on random graphs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/validate.h"
#include "testing/random_graph.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

void expect_round_trip(const Graph& g, const std::string& what) {
  for (bool types : {true, false}) {
    std::string text = print_graph(g, types);
    Graph back;
    try {
      back = parse_graph(text, what);
    } catch (const UserError& e) {
      ADD_FAILURE() << what << ": printed text does not parse: " << e.what() << "\n" << text;
      return;
    }
    EXPECT_TRUE(back == g) << what << ": parse(print(g)) != g\n" << text;
    EXPECT_EQ(print_graph(back, types), text) << what;
  }
}

TEST(RoundTrip, Examples) {
  int n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(weft::test::source_dir() + "/examples")) {
    if (e.path().extension() != ".weft") continue;
    Graph g = test::load_graph_file(e.path().string());
    expect_round_trip(g, e.path().string());
    ++n;
  }
  EXPECT_GE(n, 6);
}

TEST(RoundTrip, RandomGraphs) {
  RandomGraphOptions opts;
  std::set<OpKind> seen;
  int kernels = 0, threads = 0, multi_save = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    Graph g = random_graph(seed, opts);
    ASSERT_FALSE(g.outputs.empty()) << "seed " << seed;
    for (const Op& op : g.ops) {
      seen.insert(op.kind);
      if (!op.body) continue;
      ++kernels;
      if (op.outputs.size() > 1) ++multi_save;
      for (const Op& bop : op.body->ops) {
        seen.insert(bop.kind);
        if (bop.kind == OpKind::thread) ++threads;
      }
    }
    // Random graphs promise validity, not just well-typedness.
    for (const UserError& e : check_graph(g, default_target()))
      ADD_FAILURE() << "random graph seed " << seed << " is invalid: " << e.what() << "\n"
                    << print_graph(g);
    expect_round_trip(g, fmt::format("random graph seed {}", seed));
    if (HasFailure()) {
      ADD_FAILURE() << "first failing seed: " << seed;
      return;
    }
  }
  // The generator is only useful if it covers the whole operator table, but for the model-only
  // rows (no µGraph holds one).
  for (const OpInfo& info : all_ops())
    EXPECT_EQ(seen.count(info.kind) != 0, !is_model_only(info.kind))
        << "random graphs " << (is_model_only(info.kind) ? "contain" : "never contain") << " '"
        << info.name << "'";
  EXPECT_GT(kernels, 100);
  EXPECT_GT(threads, 20);
  EXPECT_GT(multi_save, 20);
}

TEST(RoundTrip, RandomGraphsAreDeterministic) {
  for (uint64_t seed : {7u, 99u, 12345u}) EXPECT_TRUE(random_graph(seed) == random_graph(seed));
  EXPECT_FALSE(random_graph(1) == random_graph(2));
}

}  // namespace
}  // namespace weft
