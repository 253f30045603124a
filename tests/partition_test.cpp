// Tests of the partition rules (search/partition.h): a program the search takes whole stays
// whole, operators outside the search are parts of their own, long runs are cut by size where the
// fewest values cross, and stitching the parts back gives a valid, equivalent program.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/validate.h"
#include "search/baselines.h"
#include "search/partition.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

Graph load_data(const std::string& name) {
  return expand_composites(test::load_graph_file(test::source_path("tests/data/" + name)));
}

std::vector<std::string> names(const Graph& g, const SubProgram& part) {
  std::vector<std::string> out;
  for (int i : part.ops) out.push_back(g.value(g.ops[i].outputs[0]).name);
  return out;
}

// The parts cover the program's ops once each, in order.
void expect_cover(const Graph& g, const std::vector<SubProgram>& parts) {
  int next = 0;
  for (const SubProgram& p : parts)
    for (int i : p.ops) EXPECT_EQ(i, next++);
  EXPECT_EQ(next, static_cast<int>(g.ops.size()));
}

void expect_stitch_equivalent(const Graph& g, const std::vector<SubProgram>& parts,
                              const std::vector<Graph>& replacements) {
  Graph s = stitch(g, parts, replacements);
  EXPECT_TRUE(check_graph(s, target_by_name("h100")).empty()) << print_graph(s);
  EXPECT_EQ(parse_graph(print_graph(s), "stitched"), s) << print_graph(s);
  EXPECT_EQ(verify_equivalent(g, s).verdict, Verdict::equivalent) << print_graph(s);
}

TEST(Partition, AProgramTheSearchTakesStaysWhole) {
  Graph g = load_data("rms_norm_linear_small.weft");
  std::vector<SubProgram> parts = partition_program(g, SearchConfig{});
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].rule, "whole");
  EXPECT_TRUE(parts[0].searched);
  expect_cover(g, parts);
  EXPECT_EQ(print_graph(parts[0].graph), print_graph(g));
}

TEST(Partition, OperatorsOutsideTheSearchArePartsOfTheirOwn) {
  Graph g = load_data("gelu_mlp_small.weft");
  std::vector<SubProgram> parts = partition_program(g, SearchConfig{});
  ASSERT_EQ(parts.size(), 3u);
  expect_cover(g, parts);
  EXPECT_EQ(names(g, parts[0]), std::vector<std::string>{"H"});
  EXPECT_EQ(names(g, parts[1]), std::vector<std::string>{"G"});
  EXPECT_EQ(names(g, parts[2]), std::vector<std::string>{"O"});
  EXPECT_EQ(parts[1].rule, "operator outside the search");
  EXPECT_FALSE(parts[1].searched);
  EXPECT_TRUE(parts[0].searched && parts[2].searched);
  // The part's signature: G reads H (from part 1) and produces G (read by part 3).
  EXPECT_EQ(g.value(parts[1].inputs.at(0)).name, "H");
  EXPECT_EQ(g.value(parts[1].outputs.at(0)).name, "G");
  // With gelu in the operator sets the program is searched whole.
  SearchConfig with_gelu;
  with_gelu.kernel_ops.push_back(OpKind::gelu);
  EXPECT_EQ(partition_program(g, with_gelu).size(), 1u);
}

TEST(Partition, LongRunsAreCutBySizeWhereFewestValuesCross) {
  // 11 operators after expansion, 4 of them reductions or matmuls: more than 5 kernel operators
  // and more than the 11 block operators one kernel would need (with its accumulators).
  Graph g = load_data("mlp_block_small.weft");
  SearchConfig config;
  std::vector<SubProgram> parts = partition_program(g, config);
  expect_cover(g, parts);
  ASSERT_EQ(parts.size(), 2u);
  for (const SubProgram& p : parts) {
    EXPECT_EQ(p.rule, "size");
    EXPECT_TRUE(p.searched);
  }
  // The longest first piece would end after S (two values cross); the cut comes after the
  // rms_norm instead, where only N crosses (X is an input).
  EXPECT_EQ(names(g, parts[0]).back(), "N");
  EXPECT_EQ(names(g, parts[1]), (std::vector<std::string>{"A", "B", "S", "M", "D", "O"}));
  // Turned off, the search takes the program whole whatever its size.
  SearchConfig whole;
  whole.partition = false;
  ASSERT_EQ(partition_program(g, whole).size(), 1u);
  EXPECT_EQ(partition_program(g, whole)[0].rule, "whole");
  // Smaller limits, smaller pieces: at most max_kernel_ops operators when no kernel holds more.
  config.max_kernel_ops = 3;
  config.max_block_ops = 2;
  parts = partition_program(g, config);
  expect_cover(g, parts);
  for (const SubProgram& p : parts) EXPECT_LE(p.ops.size(), 3u);
  EXPECT_GE(parts.size(), 4u);
}

// optimize() adds the program's elementwise operators to the sets: gelu no longer cuts the
// program, the max reduction (not elementwise) still does.
TEST(Partition, AProgramsElementwiseOperatorsJoinTheSearchsSets) {
  Graph gelu = load_data("gelu_mlp_small.weft");
  const SearchConfig config = with_program_operators(SearchConfig{}, gelu);
  EXPECT_EQ(std::count(config.kernel_ops.begin(), config.kernel_ops.end(), OpKind::gelu), 1);
  EXPECT_EQ(std::count(config.block_ops.begin(), config.block_ops.end(), OpKind::gelu), 1);
  EXPECT_EQ(config.kernel_ops.size(), SearchConfig{}.kernel_ops.size() + 1);
  EXPECT_EQ(partition_program(gelu, config).size(), 1u);
  Graph max = load_data("max_mlp_small.weft");
  EXPECT_EQ(with_program_operators(SearchConfig{}, max).kernel_ops, SearchConfig{}.kernel_ops);
  EXPECT_EQ(partition_program(max, with_program_operators(SearchConfig{}, max)).size(), 3u);
  EXPECT_TRUE(fusable_elementwise(OpKind::relu) && fusable_elementwise(OpKind::sub));
  EXPECT_FALSE(fusable_elementwise(OpKind::max) || fusable_elementwise(OpKind::matmul) ||
               fusable_elementwise(OpKind::pow));
}

TEST(Partition, StitchingThePartsGivesAnEquivalentProgram) {
  for (const char* file : {"gelu_mlp_small.weft", "mlp_block_small.weft"}) {
    SCOPED_TRACE(file);
    Graph g = load_data(file);
    SearchConfig config;
    config.max_kernel_ops = 3;
    std::vector<SubProgram> parts = partition_program(g, config);
    ASSERT_GT(parts.size(), 1u);
    // Each part as it is, and each part replaced by its best rule-built baseline (whose kernels
    // and internal values are renamed where they clash).
    std::vector<Graph> same, fused;
    for (const SubProgram& p : parts) {
      same.push_back(p.graph);
      std::vector<BaselineCandidate> bs = baseline_candidates(p.graph, target_by_name("h100"));
      fused.push_back(bs.back().graph);
    }
    expect_stitch_equivalent(g, parts, same);
    expect_stitch_equivalent(g, parts, fused);
  }
}

// A replacement's intermediate named like a program value the part removes is renamed; the kernel
// reading it names its body's input after the renamed operand, so the text form reads back (a
// compiled model's µGraph once failed to load: "'y2' is not defined").
TEST(Partition, AStitchedKernelsBodyReadsItsRenamedOperand) {
  const Graph g = parse_graph(R"(program p
input x0: f32[16, 16]
y2 = exp(x0)
y9 = sqr(y2)
output y9
)",
                              "p.weft");
  const Graph two_kernels = parse_graph(R"(program r
input x0: f32[16, 16]
y2 = kernel(x0, grid=[1], block=128, loop=1) {
after:
  b0 = iter(x0)
  b1 = exp(b0)
  y2 = save(b1)
}
y9 = kernel(y2, grid=[1], block=128, loop=1) {
after:
  b0 = iter(y2)
  b1 = sqr(b0)
  y9 = save(b1)
}
output y9
)",
                                        "r.weft");
  const std::vector<SubProgram> parts = partition_program(g, SearchConfig{});
  ASSERT_EQ(parts.size(), 1u);
  expect_stitch_equivalent(g, parts, {two_kernels});
  const Graph s = stitch(g, parts, {two_kernels});
  const Graph& second = *s.ops.back().body;
  EXPECT_EQ(second.value(second.inputs[0]).name, s.value(s.ops.back().inputs[0]).name);
  EXPECT_NE(s.value(s.ops.back().inputs[0]).name, "y2") << "the clash was not renamed";
}

}  // namespace
}  // namespace weft
