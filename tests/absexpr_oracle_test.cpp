// Acceptance tests of the pruning oracle: Theorem 1 on every prefix of the fused examples, pruning
// power on hand-picked and random prefixes, soundness when saturation is cut short, threads.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "absexpr/axioms.h"
#include "absexpr/of_graph.h"
#include "absexpr/oracle.h"
#include "ir/parser.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");
WEFT_TEST_TIERS_OF("AbsexprOracle.*", "tsan");

namespace weft {
namespace {

Graph load_example(const std::string& name) {
  return test::load_graph_file(test::example_path(name));
}

// Calls `visit` with every set of `g`'s ops closed under predecessors (as a mask over g.ops): the
// prefixes of every topological order of the graph.
void for_each_prefix(const Graph& g, const std::function<void(const std::vector<bool>&)>& visit) {
  std::vector<int> producer = g.producers();
  std::vector<bool> in(g.ops.size(), false);
  std::function<void(size_t)> rec = [&](size_t i) {
    if (i == g.ops.size()) {
      visit(in);
      return;
    }
    rec(i + 1);  // without op i
    for (ValueId v : g.ops[i].inputs) {
      int p = producer[static_cast<size_t>(v)];
      if (p >= 0 && !in[static_cast<size_t>(p)]) return;  // a predecessor is missing
    }
    in[i] = true;
    rec(i + 1);
    in[i] = false;
  };
  rec(0);
}

// Checks every tensor of every prefix of `g` (and, recursively, of the bodies of its kernel and
// thread ops, built on their operands' expressions) is viable. Returns the number of prefixes.
size_t check_prefixes(const Graph& g, const std::vector<TermId>& inputs, TermStore& store,
                      const Oracle& oracle, const std::string& where) {
  size_t count = 0;
  for_each_prefix(g, [&](const std::vector<bool>& mask) {
    ++count;
    std::vector<TermId> vals(g.values.size(), kNoTerm);
    if (inputs.empty()) {
      for (ValueId v : g.inputs) vals[static_cast<size_t>(v)] = store.var(g.value(v).name);
    } else {
      for (size_t i = 0; i < inputs.size(); ++i) vals[static_cast<size_t>(g.inputs[i])] = inputs[i];
    }
    for (ValueId v : g.inputs)
      ASSERT_TRUE(oracle.is_viable(vals[static_cast<size_t>(v)])) << where << " input";
    for (size_t i = 0; i < g.ops.size(); ++i) {
      if (!mask[i]) continue;
      const Op& op = g.ops[i];
      std::vector<TermId> in;
      for (ValueId v : op.inputs) in.push_back(vals[static_cast<size_t>(v)]);
      std::vector<TermId> out = abstract_op(g, op, in, store);
      for (size_t k = 0; k < out.size(); ++k) {
        vals[static_cast<size_t>(op.outputs[k])] = out[k];
        ASSERT_TRUE(oracle.is_viable(out[k]))
            << where << ": " << g.value(op.outputs[k]).name << " = " << store.str(out[k]);
      }
    }
  });
  // The body of each nested op, built while the enclosing prefix already has its operands.
  std::vector<TermId> all = abstract_values(g, store, inputs);
  for (const Op& op : g.ops) {
    if (!op.body) continue;
    std::vector<TermId> in;
    for (ValueId v : op.inputs) in.push_back(all[static_cast<size_t>(v)]);
    count += check_prefixes(*op.body, in, store, oracle, where + "/" + op_info(op.kind).name);
  }
  return count;
}

class AbsexprTheorem1 : public ::testing::TestWithParam<const char*> {};

TEST_P(AbsexprTheorem1, EveryPrefixOfTheFusedGraphIsViableAndTheWholeIsEquivalent) {
  std::string name = GetParam();
  TermStore store;
  Graph input = load_example(name + ".weft");
  Graph fused = load_example(name + ".fused.weft");
  TermId target = abstract_outputs(input, store).at(0);
  Oracle oracle(store, target);
  ASSERT_TRUE(oracle.complete()) << saturation_stop_name(oracle.stats().stop);
  EXPECT_TRUE(oracle.is_equivalent(target));
  TermId whole = abstract_outputs(fused, store).at(0);
  EXPECT_TRUE(oracle.is_equivalent(whole)) << store.str(whole) << " vs " << store.str(target);
  size_t prefixes = check_prefixes(fused, {}, store, oracle, name);
  std::printf("[ %s ] %zu prefixes checked; e-graph %zu nodes, %zu classes, %.3f s\n", name.c_str(),
              prefixes, oracle.stats().nodes, oracle.stats().classes, oracle.stats().seconds);
  EXPECT_GT(prefixes, 20u);
}

INSTANTIATE_TEST_SUITE_P(Examples, AbsexprTheorem1,
                         ::testing::Values("rms_norm_linear", "gated_mlp", "gqa_attention"));

TEST(AbsexprOracle, RejectsPrefixesThatCannotLeadToTheTarget) {
  TermStore store;
  TermId target = abstract_outputs(load_example("rms_norm_linear.weft"), store).at(0);
  Oracle oracle(store, target);
  ASSERT_TRUE(oracle.complete());
  const char* rms = "(sqrt (add (sum 4096 (mul X X)) (const)))";
  std::vector<std::string> doomed = {
      "(exp X)",
      "(sqrt X)",
      "(silu X)",
      "(relu (sum 4096 (mul X W)))",
      "(max 4096 X)",
      "(mul W W)",  // a matmul of the wrong operands
      "(sum 4096 (mul W W))",
      "(sum 4096 (mul X (mul X W)))",
      "(sum 3 (mul X W))",  // a sum over the wrong size
      "(sum 8192 (mul X W))",
      "(sum 4096 (sum 4096 (mul X W)))",
      "(mul (sum 2048 X) (sum 4096 W))",
      "(div X W)",
      "(div W X)",
      "(add X W)",
      "(add X (const))",
      "(mul X (const))",
      "(sqrt (sum 4096 (mul X X)))",  // the eps is missing
      "(sqrt (add (sum 2048 (mul X X)) (const)))",
      "(div (sum 4096 (mul X W)) (sum 4096 (mul X X)))",
      fmt::format("(mul X {})", rms),  // multiplies by the RMS instead of dividing
      fmt::format("(div {} X)", rms),
      "(add (sum 4096 (mul X W)) (const))",
      "(cat X W)",
      "(exp (sum 4096 (mul X W)))",
      "(mul Y W)",  // not an input of the program
  };
  for (const std::string& text : doomed) {
    TermId t = store.parse(text);
    EXPECT_EQ(oracle.classify(t), PruneVerdict::not_viable) << text;
  }
  EXPECT_GE(doomed.size(), 20u);
  // ... while the pieces of the fused kernel (and other legal regroupings) survive.
  std::vector<std::string> fine = {
      "X",
      "(mul X W)",
      "(mul W X)",
      "(sum 64 (mul X W))",
      "(sum 64 (sum 64 (mul X W)))",
      "(mul (sum 64 X) (sum 64 W))",
      "(sum 4096 (mul X X))",
      rms,
      fmt::format("(div W {})", rms),
      fmt::format("(div X {})", rms),
      fmt::format("(sum 16 (div (sum 256 (mul X W)) {}))", rms),
  };
  for (const std::string& text : fine) {
    EXPECT_NE(oracle.classify(store.parse(text)), PruneVerdict::not_viable) << text;
  }
  EXPECT_EQ(oracle.classify(store.parse(fmt::format("(div (sum 4096 (mul W X)) {})", rms))),
            PruneVerdict::equivalent);
}

// A random "prefix": a term built from the program's inputs by a few operators the search might
// place, with reduction sizes drawn from divisors of the real ones and a few others.
TermId random_prefix(std::mt19937& rng, TermStore& s, const std::vector<TermId>& leaves,
                     int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  if (depth == 0 || pick(4) == 0)
    return leaves[static_cast<size_t>(pick(static_cast<int>(leaves.size())))];
  static const int64_t kSizes[] = {2, 4, 16, 64, 256, 4096, 3, 96, 8192};
  TermId a = random_prefix(rng, s, leaves, depth - 1);
  switch (pick(9)) {
    case 0:
      return s.add(a, random_prefix(rng, s, leaves, depth - 1));
    case 1:
    case 2:
      return s.sum(kSizes[pick(9)], s.mul(a, random_prefix(rng, s, leaves, depth - 1)));
    case 3:
      return s.mul(a, random_prefix(rng, s, leaves, depth - 1));
    case 4:
      return s.div(a, random_prefix(rng, s, leaves, depth - 1));
    case 5:
      return s.sum(kSizes[pick(9)], a);
    case 6:
      return s.fn(OpKind::sqrt, a);
    case 7:
      return s.add(a, s.cst());
    default:
      return s.fn(OpKind::exp, a);
  }
}

TEST(AbsexprOracle, PrintsTheFractionOfRandomPrefixesRejected) {
  for (const char* name : {"rms_norm_linear", "gated_mlp", "gqa_attention"}) {
    TermStore store;
    Graph input = load_example(std::string(name) + ".weft");
    TermId target = abstract_outputs(input, store).at(0);
    Oracle oracle(store, target);
    std::vector<TermId> leaves;
    for (ValueId v : input.inputs) leaves.push_back(store.var(input.value(v).name));
    std::mt19937 rng(42);
    int rejected = 0, total = 2000, non_leaf = 0;
    for (int i = 0; i < total; ++i) {
      TermId t = random_prefix(rng, store, leaves, 3);
      non_leaf += store.node(t).op != TermOp::var;
      rejected += !oracle.is_viable(t);
    }
    ASSERT_GT(non_leaf, total / 2) << "the generator must produce real prefixes";
    double frac = static_cast<double>(rejected) / total;
    std::printf("[ %s ] random prefixes rejected: %d / %d = %.1f%%\n", name, rejected, total,
                100.0 * frac);
    EXPECT_GT(frac, 0.5) << name;
    EXPECT_LT(frac, 1.0) << name;
  }
}

TEST(AbsexprOracle, NeverRejectsWhenSaturationIsCutShort) {
  TermStore store;
  TermId target = abstract_outputs(load_example("gqa_attention.weft"), store).at(0);
  SaturationLimits tiny;
  tiny.max_nodes = 50;
  Oracle oracle(store, target, tiny);
  EXPECT_FALSE(oracle.complete());
  EXPECT_EQ(oracle.stats().stop, SaturationStop::node_limit);
  for (const char* text : {"(exp X)", "(sum 16 (sum 4 (sum 64 (exp (sum 64 (mul Q K))))))"}) {
    EXPECT_TRUE(oracle.is_viable(store.parse(text))) << text;
    EXPECT_TRUE(oracle.is_equivalent(store.parse(text))) << text;
  }
  SaturationLimits one_round;
  one_round.max_iterations = 1;
  Oracle cut(store, target, one_round);
  EXPECT_EQ(cut.stats().stop, SaturationStop::iteration_limit);
  EXPECT_TRUE(cut.is_viable(store.parse("(exp X)")));
  // Nested reductions whose sizes multiply past 2^40 get no factorization rules: no pruning.
  TermId huge = store.parse("(sum 1048576 (mul X (sum 1048576 (mul X (sum 3 X)))))");
  bool truncated = false;
  reduction_sizes(store, huge, TermOp::sum, &truncated);
  EXPECT_TRUE(truncated);
  Oracle big(store, huge);
  EXPECT_EQ(big.stats().stop, SaturationStop::size_limit);
  EXPECT_TRUE(big.is_viable(store.parse("(exp X)")));
}

TEST(AbsexprOracle, ConcurrentQueriesAgreeWithSequentialOnes) {
  TermStore store;
  TermId target = abstract_outputs(load_example("rms_norm_linear.weft"), store).at(0);
  Oracle oracle(store, target);
  Oracle fresh(store, target);
  std::vector<TermId> leaves = {store.var("X"), store.var("W")};
  constexpr int kThreads = 4;
  std::vector<std::vector<PruneVerdict>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(7);  // same sequence in every thread: same terms, racing on one cache
      for (int i = 0; i < 3000; ++i)
        got[static_cast<size_t>(t)].push_back(
            oracle.classify(random_prefix(rng, store, leaves, 3)));
    });
  }
  for (auto& th : threads) th.join();
  std::mt19937 rng(7);
  std::vector<PruneVerdict> want;
  for (int i = 0; i < 3000; ++i)
    want.push_back(fresh.classify(random_prefix(rng, store, leaves, 3)));
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[static_cast<size_t>(t)], want);
  EXPECT_GT(std::count(want.begin(), want.end(), PruneVerdict::not_viable), 100);
  EXPECT_GT(std::count(want.begin(), want.end(), PruneVerdict::viable), 10);
}

TEST(AbsexprOracle, FactorizationSizesComeFromTheTarget) {
  TermStore s;
  std::set<int64_t> sizes =
      reduction_sizes(s, s.parse("(exp (sum 12 (mul (sum 2 X) (exp (sum 5 Y)))))"));
  EXPECT_EQ(sizes, (std::set<int64_t>{2, 3, 4, 5, 6, 8, 12, 24}));
  TermId mixed = s.parse("(max 4 (add (max 3 X) (sum 5 Y)))");
  EXPECT_EQ(reduction_sizes(s, mixed, TermOp::max), (std::set<int64_t>{2, 3, 4, 6, 12}));
  EXPECT_EQ(reduction_sizes(s, mixed, TermOp::sum), (std::set<int64_t>{5}));
  EXPECT_EQ(factorization_axioms({12}, TermOp::max).size(), 4u);  // 2x6 3x4 4x3 6x2
}

}  // namespace
}  // namespace weft
