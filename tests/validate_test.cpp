// Tests of the validity checker: one minimal violating graph per rule, checking message and
// location, and the valid examples on every GPU target.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "ir/parser.h"
#include "ir/validate.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

using L = std::vector<int64_t>;

SourceLoc at(int line) {
  return SourceLoc{"t.weft", line, 1};
}

const Target& h100() {
  return target_by_name("h100");
}

// The fused RMSNorm + Linear of Mirage's Figure 3, one statement per line:
//   1 input X   2 input W   3 O = kernel(...)   4 x = iter   5 w = iter   6 xx = sqr
//   7 s = sum   8 sa = accum   9 m = matmul   10 ma = accum   12 ms = scale   13 e = shift
//   14 r = sqrt   15 y = div   16 O = save   18 output O
Graph rms_norm_linear(int64_t grid = 96, int64_t loop = 16, int64_t k = 4096) {
  GraphBuilder b(Level::block);
  b.set_block_params({grid, 1, 1}, 128, loop, at(3));
  ValueId X = b.add_input("X", {DType::f16, {16, k}}, at(3));
  ValueId W = b.add_input("W", {DType::f16, {k, 6144}}, at(3));
  ValueId x = b.add(OpKind::iter, {X}, {{"fmap", int64_t{1}}}, "x", at(4));
  ValueId w = b.add(OpKind::iter, {W}, {{"imap", L{1}}, {"fmap", int64_t{0}}}, "w", at(5));
  ValueId xx = b.add(OpKind::sqr, {x}, {}, "xx", at(6));
  ValueId s = b.add(OpKind::sum, {xx}, {{"dim", int64_t{1}}}, "s", at(7));
  ValueId sa = b.add(OpKind::accum_sum, {s}, {}, "sa", at(8));
  ValueId m = b.add(OpKind::matmul, {x, w}, {}, "m", at(9));
  ValueId ma = b.add(OpKind::accum_sum, {m}, {}, "ma", at(10));
  const Stage P = Stage::post;
  ValueId ms = b.add(OpKind::scale, {sa}, {{"factor", Rational(1)}}, "ms", at(12), P);
  ValueId e = b.add(OpKind::shift, {ms}, {{"offset", Rational(0)}}, "e", at(13), P);
  ValueId r = b.add(OpKind::sqrt, {e}, {}, "r", at(14), P);
  ValueId y = b.add(OpKind::div, {ma, r}, {}, "y", at(15), P);
  b.add(OpKind::save, {y}, {{"omap", L{1}}}, "O", at(16), P);

  GraphBuilder kg(Level::kernel, "rms_norm_linear_fused");
  ValueId KX = kg.add_input("X", {DType::f16, {16, k}}, at(1));
  ValueId KW = kg.add_input("W", {DType::f16, {k, 6144}}, at(2));
  auto out = kg.add_nested(OpKind::kernel, {KX, KW}, std::move(b).finish(), {}, at(3));
  kg.add_output(out[0], at(18));
  return std::move(kg).finish();
}

// The fused gated MLP: two matmuls in the loop, SiLU and the product in a thread graph after it.
Graph gated_mlp() {
  GraphBuilder b(Level::block);
  b.set_block_params({64, 1, 1}, 128, 16, at(4));
  ValueId X = b.add_input("X", {DType::f16, {8, 4096}}, at(4));
  ValueId W1 = b.add_input("W1", {DType::f16, {4096, 4096}}, at(4));
  ValueId W2 = b.add_input("W2", {DType::f16, {4096, 4096}}, at(4));
  ValueId x = b.add(OpKind::iter, {X}, {{"fmap", int64_t{1}}}, "x", at(5));
  ValueId w1 = b.add(OpKind::iter, {W1}, {{"imap", L{1}}, {"fmap", int64_t{0}}}, "w1", at(6));
  ValueId w2 = b.add(OpKind::iter, {W2}, {{"imap", L{1}}, {"fmap", int64_t{0}}}, "w2", at(7));
  ValueId aa =
      b.add(OpKind::accum_sum, {b.add(OpKind::matmul, {x, w1}, {}, "a", at(8))}, {}, "aa", at(9));
  ValueId ba =
      b.add(OpKind::accum_sum, {b.add(OpKind::matmul, {x, w2}, {}, "b", at(10))}, {}, "ba", at(11));
  GraphBuilder t(Level::thread);
  ValueId taa = t.add_input("aa", b.graph().type(aa), at(13));
  ValueId tba = t.add_input("ba", b.graph().type(ba), at(13));
  ValueId p =
      t.add(OpKind::mul, {t.add(OpKind::silu, {taa}, {}, "s", at(14)), tba}, {}, "p", at(15));
  t.add_output(p, at(16));
  ValueId y =
      b.add_nested(OpKind::thread, {aa, ba}, std::move(t).finish(), {"y"}, at(13), Stage::post)[0];
  b.add(OpKind::save, {y}, {{"omap", L{1}}}, "O", at(18), Stage::post);

  GraphBuilder kg(Level::kernel, "gated_mlp_fused");
  ValueId KX = kg.add_input("X", {DType::f16, {8, 4096}}, at(1));
  ValueId KW1 = kg.add_input("W1", {DType::f16, {4096, 4096}}, at(2));
  ValueId KW2 = kg.add_input("W2", {DType::f16, {4096, 4096}}, at(3));
  auto out = kg.add_nested(OpKind::kernel, {KX, KW1, KW2}, std::move(b).finish(), {}, at(4));
  kg.add_output(out[0], at(20));
  return std::move(kg).finish();
}

// The unfused input program: rms_norm then matmul.
Graph input_program() {
  GraphBuilder g(Level::kernel, "rms_norm_linear");
  ValueId X = g.add_input("X", {DType::f16, {16, 4096}}, at(1));
  ValueId W = g.add_input("W", {DType::f16, {4096, 6144}}, at(2));
  ValueId n = g.add(OpKind::rms_norm, {X}, {{"eps", Rational(0)}}, "N", at(3));
  g.add_output(g.add(OpKind::matmul, {n, W}, {}, "O", at(4)), at(5));
  return std::move(g).finish();
}

// Applies `edit` to the body of op `index` of `g` (bodies are shared and immutable).
void edit_body(Graph& g, size_t index, const std::function<void(Graph&)>& edit) {
  Graph body = *g.ops.at(index).body;
  edit(body);
  g.ops[index].body = std::make_shared<const Graph>(std::move(body));
}

// A kernel graph around a block graph built by `fill`, with operands X f16[16, 256] and
// W f16[256, 64] and the block's results as program outputs.
Graph wrap(const std::function<void(GraphBuilder&, ValueId X, ValueId W)>& fill, int64_t loop = 4) {
  GraphBuilder b(Level::block);
  b.set_block_params({1, 1, 1}, 128, loop, at(3));
  ValueId X = b.add_input("X", {DType::f16, {16, 256}}, at(3));
  ValueId W = b.add_input("W", {DType::f16, {256, 64}}, at(3));
  fill(b, X, W);
  GraphBuilder kg(Level::kernel);
  ValueId KX = kg.add_input("X", {DType::f16, {16, 256}}, at(1));
  ValueId KW = kg.add_input("W", {DType::f16, {256, 64}}, at(2));
  for (ValueId o : kg.add_nested(OpKind::kernel, {KX, KW}, std::move(b).finish(), {}, at(3)))
    kg.add_output(o, at(20));
  return std::move(kg).finish();
}

// The single violation of `g` on h100: its message contains `text` and it is at `line`.
void expect_error(const Graph& g, const std::string& text, int line, size_t count = 1,
                  const Target& target = h100()) {
  auto errors = check_graph(g, target);
  ASSERT_EQ(errors.size(), count) << (errors.empty() ? "no errors" : errors[0].what());
  EXPECT_NE(errors[0].message().find(text), std::string::npos) << errors[0].what();
  EXPECT_EQ(errors[0].loc().line, line) << errors[0].what();
  EXPECT_EQ(errors[0].loc().file, "t.weft");
}

TEST(Validate, ValidExamplesPassOnEveryTarget) {
  for (const char* t : {"h100", "a100", "h200", "cpu"}) {
    const Target& target = target_by_name(t);
    for (const Graph& g : {rms_norm_linear(), gated_mlp(), input_program()}) {
      auto errors = check_graph(g, target);
      EXPECT_TRUE(errors.empty()) << t << ": " << errors.front().what();
      EXPECT_NO_THROW(validate(g, target));
    }
  }
}

TEST(Validate, SharedMemoryEstimateCountsTilesByDtype) {
  Graph g = rms_norm_linear();
  const Graph& block = *g.ops[0].body;
  // Tiles (f16): x 16x256, w 256x64, xx 16x256, s 16x1, m 16x64; post: ms, e, r 16x1, y 16x64.
  // Accumulators at f32 width: sa 16x1, ma 16x64. The save result is in device memory.
  int64_t want =
      2 * (16 * 256 + 256 * 64 + 16 * 256 + 16 + 16 * 64 + 3 * 16 + 16 * 64) + 4 * (16 + 16 * 64);
  EXPECT_EQ(block_smem_bytes(block), want);
  EXPECT_GT(want, 40 * 1024);
}

TEST(Validate, SharedMemoryOverflowOnSmallerTarget) {
  // 48 blocks and 8 iterations: a 512x128 f16 slice of W per iteration (128 KiB) and the rest
  // (about 40 KiB) fit the 227 KiB of h100 and h200 but not the 163 KiB of a100.
  Graph g = rms_norm_linear(48, 8);
  int64_t smem = block_smem_bytes(*g.ops[0].body);
  EXPECT_GT(smem, 163 * 1024);
  EXPECT_LE(smem, 227 * 1024);
  EXPECT_TRUE(check_graph(g, target_by_name("h100")).empty());
  EXPECT_TRUE(check_graph(g, target_by_name("h200")).empty());
  expect_error(g, "KiB of shared memory, more than the 163 KiB a block can use on a100", 3, 1,
               target_by_name("a100"));

  Target tiny = h100();
  tiny.name = "tiny";
  tiny.smem_per_block_bytes = 32 * 1024;
  expect_error(rms_norm_linear(), "more than the 32 KiB a block can use on tiny", 3, 1, tiny);
}

TEST(Validate, StoredTypesAreReinferred) {
  Graph g = rms_norm_linear();
  edit_body(g, 0, [](Graph& b) { b.values[b.find("m")].type.shape = {16, 32}; });
  expect_error(g, "'m' is recorded as f16[16, 32], but matmul gives f16[16, 64] here", 9);
}

TEST(Validate, OpMustBeAllowedAtItsLevel) {
  Graph g = gated_mlp();
  edit_body(g, 0, [](Graph& b) {
    for (Op& op : b.ops)
      if (op.kind == OpKind::thread) {
        Graph t = *op.body;
        t.ops[1].kind = OpKind::matmul;
        op.body = std::make_shared<const Graph>(std::move(t));
      }
  });
  expect_error(g, "'matmul' cannot appear in a thread graph", 15);
}

TEST(Validate, UndefinedValueId) {
  Graph g = input_program();
  g.ops[1].inputs[1] = 99;
  expect_error(g, "operand 2 of 'matmul' refers to value #99, which does not exist", 4);
}

TEST(Validate, UseBeforeDefinitionAndCycles) {
  Graph g = input_program();
  std::swap(g.ops[0], g.ops[1]);
  expect_error(g, "'N' is used before it is defined (line 3)", 4);

  Graph cyc = input_program();
  cyc.ops[0].inputs[0] = cyc.find("O");  // N = rms_norm(O), O = matmul(N, W)
  cyc.ops[0].loc = at(3);
  auto errors = check_graph(cyc, h100());
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].message().find("'O' is used before it is defined"), std::string::npos)
      << errors[0].what();
}

TEST(Validate, NamesAreAssignedOnce) {
  Graph g = input_program();
  g.values[g.find("O")].name = "N";
  g.values.back().loc = at(4);
  expect_error(g, "'N' is already defined (line 3); every name is assigned once", 4);
}

TEST(Validate, KernelGraphNeedsAnOutput) {
  Graph g = input_program();
  g.outputs.clear();
  g.loc = at(1);
  expect_error(g, "this program has no outputs", 1);
}

TEST(Validate, UnusedProgramInputIsAllowed) {
  GraphBuilder g(Level::kernel);
  ValueId a = g.add_input("A", {DType::f32, {4, 4}}, at(1));
  g.add_input("Unused", {DType::f32, {4, 4}}, at(2));
  g.add_output(g.add(OpKind::exp, {a}, {}, "E", at(3)), at(4));
  EXPECT_TRUE(check_graph(std::move(g).finish(), h100()).empty());
}

TEST(Validate, EveryBlockInputIsReadByAnIter) {
  Graph g = wrap([](GraphBuilder& b, ValueId X, ValueId) {
    ValueId xa =
        b.add(OpKind::accum_sum, {b.add(OpKind::iter, {X}, {}, "x", at(4))}, {}, "xa", at(5));
    b.add(OpKind::save, {xa}, {}, "O", at(6), Stage::post);
  });
  expect_error(g, "kernel operand 'W' is never read by an iter", 3);
}

TEST(Validate, KernelOperandsAreDistinct) {
  Graph g = rms_norm_linear(96, 16, 6144);  // X f16[16, 6144], W f16[6144, 6144]
  g.ops[0].inputs = {0, 0};
  expect_error(g, "'X' is passed twice to kernel", 3);
}

TEST(Validate, KernelResultsAreNamedAfterTheirSaves) {
  Graph g = rms_norm_linear();
  g.values[g.find("O")].name = "P";
  expect_error(g, "result 1 of this kernel is named 'P' but its save is named 'O'", 3);
}

TEST(Validate, LoopStageCannotUseAccumulatorResults) {
  Graph g = rms_norm_linear();
  edit_body(g, 0, [](Graph& b) {
    for (Op& op : b.ops)
      if (op.loc.line == 12) op.stage = Stage::loop;  // ms = scale(sa) inside the loop
  });
  // Only one violation: e, which now reads a loop value after the loop, does not fail again.
  expect_error(g, "'sa' is the result of an accumulator, available only after the loop", 12);
}

TEST(Validate, PostStageCannotUseLoopValues) {
  Graph g = rms_norm_linear();
  edit_body(g, 0, [](Graph& b) {
    for (Op& op : b.ops)
      if (op.loc.line == 15) op.inputs[0] = b.find("m");  // y = div(m, r)
  });
  expect_error(g, "'m' is a loop-stage value, which only exists inside the loop", 15);
}

TEST(Validate, PathRuleAtMostOneAccumulator) {
  Graph g = wrap([](GraphBuilder& b, ValueId X, ValueId) {
    ValueId x = b.add(OpKind::iter, {X}, {}, "x", at(4));
    ValueId xa = b.add(OpKind::accum_sum, {x}, {}, "xa", at(5));
    ValueId xb = b.add(OpKind::accum_sum, {xa}, {}, "xb", at(6));
    b.add(OpKind::save, {xb}, {}, "O", at(7), Stage::post);
  });
  // W is unused too, reported first at the kernel header.
  auto errors = check_graph(g, h100());
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[1].message().find("'xa' is already the result of an accumulator (line 5); "
                                     "every path from an iter to a save passes at most one "
                                     "accumulator"),
            std::string::npos)
      << errors[1].what();
  EXPECT_EQ(errors[1].loc().line, 6);
}

TEST(Validate, PathRuleExactlyOneAccumulatorFromALoopIter) {
  Graph g = wrap([](GraphBuilder& b, ValueId X, ValueId W) {
    ValueId m =
        b.add(OpKind::matmul,
              {b.add(OpKind::iter, {X}, {}, "x", at(4)), b.add(OpKind::iter, {W}, {}, "w", at(5))},
              {}, "m", at(6));
    b.add(OpKind::save, {m}, {}, "O", at(7), Stage::post);
  });
  expect_error(g,
               "'m' is a loop-stage value: every path from a loop-stage iter to a save passes "
               "through exactly one accumulator",
               7);
}

TEST(Validate, PathRuleExactlyOneIter) {
  Graph g = wrap([](GraphBuilder& b, ValueId X, ValueId W) {
    b.add(OpKind::iter, {W}, {}, "w", at(4));
    ValueId x = b.add(OpKind::iter, {X}, {}, "x", at(5));
    ValueId xx = b.add(OpKind::iter, {x}, {}, "xx", at(6));
    b.add(OpKind::save, {b.add(OpKind::accum_sum, {xx}, {}, "a", at(7))}, {}, "O", at(8),
          Stage::post);
  });
  expect_error(g, "iter reads kernel operands only, and 'x' is computed inside this block graph",
               6);
}

TEST(Validate, PostStageIterHasNoFmapAndNeedsNoAccumulator) {
  Graph ok = wrap([](GraphBuilder& b, ValueId X, ValueId W) {
    ValueId xa =
        b.add(OpKind::accum_sum, {b.add(OpKind::iter, {X}, {}, "x", at(4))}, {}, "xa", at(5));
    ValueId w = b.add(OpKind::iter, {W}, {}, "w", at(6), Stage::post);
    b.add(OpKind::save, {b.add(OpKind::matmul, {xa, w}, {}, "m", at(7), Stage::post)}, {}, "O",
          at(8), Stage::post);
  });
  EXPECT_TRUE(check_graph(ok, h100()).empty());

  Graph bad = wrap(
      [](GraphBuilder& b, ValueId X, ValueId W) {
        ValueId xa =
            b.add(OpKind::accum_sum, {b.add(OpKind::iter, {X}, {}, "x", at(4))}, {}, "xa", at(5));
        ValueId w = b.add(OpKind::iter, {W}, {{"fmap", int64_t{1}}}, "w", at(6), Stage::post);
        b.add(OpKind::save, {b.add(OpKind::matmul, {xa, w}, {}, "m", at(7), Stage::post)}, {}, "O",
              at(8), Stage::post);
      },
      1);
  expect_error(bad, "its fmap must be '-' (got 1)", 6);
}

TEST(Validate, OperandsAreReadThroughIters) {
  Graph g = wrap([](GraphBuilder& b, ValueId X, ValueId W) {
    ValueId x = b.add(OpKind::iter, {X}, {}, "x", at(4));
    ValueId m = b.add(OpKind::matmul, {x, W}, {}, "m", at(5));
    b.add(OpKind::save, {b.add(OpKind::accum_sum, {m}, {}, "a", at(6))}, {}, "O", at(7),
          Stage::post);
  });
  auto errors = check_graph(g, h100());
  ASSERT_EQ(errors.size(), 2u);  // W is also never read by an iter
  EXPECT_NE(errors[1].message().find("'W' is a kernel operand in device memory: read it through "
                                     "iter(W, ...)"),
            std::string::npos)
      << errors[1].what();
  EXPECT_EQ(errors[1].loc().line, 5);
}

TEST(Validate, AccumulatorsRunInTheLoop) {
  Graph g = wrap([](GraphBuilder& b, ValueId X, ValueId W) {
    b.add(OpKind::iter, {W}, {}, "w", at(4));
    ValueId x = b.add(OpKind::iter, {X}, {}, "x", at(5));
    ValueId a = b.add(OpKind::accum_sum, {x}, {}, "a", at(6), Stage::post);
    b.add(OpKind::save, {a}, {}, "O", at(7), Stage::post);
  });
  expect_error(g, "accumulators run inside the loop: move this 'accum_sum' before 'after:'", 6);
}

TEST(Validate, SavesComeAfterTheLoop) {
  Graph g = wrap([](GraphBuilder& b, ValueId X, ValueId W) {
    b.add(OpKind::iter, {W}, {}, "w", at(4));
    ValueId a =
        b.add(OpKind::accum_sum, {b.add(OpKind::iter, {X}, {}, "x", at(5))}, {}, "a", at(6));
    b.add(OpKind::save, {a}, {}, "O", at(7));
  });
  expect_error(g, "save writes the block's result once, after the loop", 7);
}

TEST(Validate, SaveResultsAreNotReadInside) {
  Graph g = wrap([](GraphBuilder& b, ValueId X, ValueId W) {
    b.add(OpKind::iter, {W}, {}, "w", at(4));
    ValueId a =
        b.add(OpKind::accum_sum, {b.add(OpKind::iter, {X}, {}, "x", at(5))}, {}, "a", at(6));
    ValueId o = b.add(OpKind::save, {a}, {}, "O", at(7), Stage::post);
    b.add(OpKind::save, {b.add(OpKind::exp, {o}, {}, "e", at(8), Stage::post)}, {}, "P", at(9),
          Stage::post);
  });
  expect_error(g, "'O' is a save result, written to device memory", 8);
}

TEST(Validate, LoopStageComesFirst) {
  Graph g = wrap([](GraphBuilder& b, ValueId X, ValueId W) {
    ValueId w = b.add(OpKind::iter, {W}, {}, "w", at(4), Stage::post);
    ValueId x = b.add(OpKind::iter, {X}, {}, "x", at(5));
    ValueId a = b.add(OpKind::accum_sum, {x}, {}, "a", at(6));
    b.add(OpKind::save, {b.add(OpKind::matmul, {a, w}, {}, "m", at(7), Stage::post)}, {}, "O",
          at(8), Stage::post);
  });
  expect_error(g, "this loop-stage 'iter' comes after post-stage statements", 5);
}

TEST(Validate, GridLimitsOfTheTarget) {
  Graph g = rms_norm_linear();
  edit_body(g, 0, [](Graph& b) { b.grid[1] = 70000; });
  auto errors = check_graph(g, h100());
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].message().find("grid dim y has 70000 blocks, more than the 65535 h100 "
                                     "allows"),
            std::string::npos)
      << errors[0].what();
  EXPECT_EQ(errors[0].loc().line, 3);

  Target small = h100();
  small.name = "small";
  small.max_blocks_total = 64;
  expect_error(rms_norm_linear(), "the grid has 96 blocks, more than the 64 small allows", 3, 1,
               small);
}

TEST(Validate, ThreadsPerBlock) {
  Graph many = rms_norm_linear();
  edit_body(many, 0, [](Graph& b) { b.threads = 2048; });
  expect_error(many, "block=2048 threads per block is more than the 1024 a block can have on h100",
               3);
  Graph odd = rms_norm_linear();
  edit_body(odd, 0, [](Graph& b) { b.threads = 100; });
  expect_error(odd, "block=100 threads per block is not a multiple of the warp size (32) on h100",
               3);
  // The CPU back end ignores the block size.
  EXPECT_TRUE(check_graph(odd, target_by_name("cpu")).empty());
}

TEST(Validate, ImapDivisibility) {
  Graph g = rms_norm_linear();
  edit_body(g, 0, [](Graph& b) { b.grid[0] = 7; });
  auto errors = check_graph(g, h100());
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].message().find("iter: imap cuts dim 1 (size 6144) into 7 blocks"),
            std::string::npos)
      << errors[0].what();
  EXPECT_EQ(errors[0].loc().line, 5);
}

TEST(Validate, FmapDivisibility) {
  Graph g = rms_norm_linear();
  edit_body(g, 0, [](Graph& b) { b.loop = 3; });
  auto errors = check_graph(g, h100());
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].message().find("fmap cuts dim 1 (size 4096 per block) into 3 iterations"),
            std::string::npos)
      << errors[0].what();
  EXPECT_EQ(errors[0].loc().line, 4);
}

TEST(Validate, GridDimOfSizeOneMapsToDash) {
  Graph g = rms_norm_linear();
  edit_body(g, 0, [](Graph& b) {
    for (Op& op : b.ops)
      if (op.loc.line == 4) op.attrs.set("imap", L{-1, 0, -1});
  });
  expect_error(g, "grid dim y has size 1, so its imap entry must be '-'", 4);
}

TEST(Validate, OmapCoversEveryGridDim) {
  Graph g = rms_norm_linear();
  edit_body(g, 0, [](Graph& b) {
    for (Op& op : b.ops)
      if (op.kind == OpKind::save) op.attrs.set("omap", L{-1, -1, -1});
  });
  expect_error(g, "omap entry for grid dim x (size 96) is '-'", 16);
}

TEST(Validate, ThreadGraphNeedsAnOutputAndUsesItsOperands) {
  Graph none = gated_mlp();
  edit_body(none, 0, [](Graph& b) {
    for (Op& op : b.ops)
      if (op.kind == OpKind::thread) {
        Graph t = *op.body;
        t.outputs.clear();
        op.body = std::make_shared<const Graph>(std::move(t));
      }
  });
  auto errors = check_graph(none, h100());
  ASSERT_GE(errors.size(), 1u);
  EXPECT_NE(errors[0].message().find("this thread defines 1 result, but its body produces 0"),
            std::string::npos)
      << errors[0].what();

  Graph unused = gated_mlp();
  edit_body(unused, 0, [](Graph& b) {
    for (Op& op : b.ops)
      if (op.kind == OpKind::thread) {
        Graph t = *op.body;
        t.ops[1].inputs[1] = t.ops[1].inputs[0];  // p = mul(s, s): ba is never used
        op.body = std::make_shared<const Graph>(std::move(t));
      }
  });
  expect_error(unused, "thread operand 'ba' is never used", 13);
}

TEST(Validate, AllViolationsInProgramOrderAndValidateThrowsTheFirst) {
  Graph g = rms_norm_linear();
  edit_body(g, 0, [](Graph& b) {
    for (Op& op : b.ops) {
      if (op.loc.line == 15) op.inputs[0] = b.find("m");      // post stage reads a loop value
      if (op.loc.line == 7) op.attrs.set("dim", int64_t{0});  // s has the wrong recorded type
    }
  });
  g.outputs.clear();
  auto errors = check_graph(g, h100());
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].loc().line, 7);
  EXPECT_EQ(errors[1].loc().line, 15);
  EXPECT_NE(errors[2].message().find("no outputs"), std::string::npos) << errors[2].what();
  try {
    validate(g, h100());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.loc().line, 7);
  }
}

std::string read_file(const std::string& path) {
  return test::read_text(path);
}

TEST(Validate, EveryExampleFileIsValidOnH100AndH200) {
  int count = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(weft::test::source_dir() + "/examples")) {
    if (e.path().extension() != ".weft") continue;
    Graph g = parse_graph(read_file(e.path().string()), e.path().string());
    for (const char* t : {"h100", "h200"}) {
      auto errors = check_graph(g, target_by_name(t));
      EXPECT_TRUE(errors.empty()) << t << ": " << errors.front().what();
    }
    ++count;
  }
  EXPECT_GE(count, 5);
}

// Runs the CLI; returns the exit code and stdout + stderr.
std::pair<int, std::string> run_cli(const std::string& args) {
  return test::run_weft(args);
}

TEST(CheckCommand, PrintsASummaryOrEveryViolation) {
  std::string dir = testing::TempDir();
  auto [rc, out] =
      run_cli("check " + weft::test::source_dir() + "/examples/rms_norm_linear.fused.weft");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out,
            "ok: 2 inputs, 1 output, 1 graph-defined kernel (grid 96x1x1, loop 16, 56.2 KiB "
            "shared memory on h100)\n");

  // Two independent violations: both are reported, in order, with file:line:col.
  std::string bad = dir + "/validate_two_errors.weft";
  std::ofstream(bad) << "input X: f16[16, 256]\n"
                        "O = kernel(X, grid=[1], block=100, loop=4) {\n"
                        "  x = iter(X, fmap=1)\n"
                        "  xa = accum_sum(x)\n"
                        "after:\n"
                        "  y = add(xa, x)\n"
                        "  O = save(y)\n"
                        "}\n"
                        "output O\n";
  auto [rc2, out2] = run_cli("check " + bad);
  EXPECT_EQ(rc2, 1) << out2;
  size_t first = out2.find(bad + ":2:");
  size_t second = out2.find(bad + ":6:");
  EXPECT_NE(first, std::string::npos) << out2;
  EXPECT_NE(second, std::string::npos) << out2;
  EXPECT_LT(first, second) << out2;
  EXPECT_NE(out2.find("not a multiple of the warp size"), std::string::npos) << out2;
  EXPECT_NE(out2.find("'x' is a loop-stage value"), std::string::npos) << out2;

  auto [rc3, out3] = run_cli("check --target nosuch " + bad);
  EXPECT_EQ(rc3, 1);
  EXPECT_NE(out3.find("unknown target 'nosuch'"), std::string::npos) << out3;
}

TEST(TableCommands, OpsAndTargetsListEveryEntry) {
  auto [rc, ops] = run_cli("ops");
  EXPECT_EQ(rc, 0);
  for (const OpInfo& info : all_ops())
    EXPECT_NE(ops.find(std::string("\n") + info.name + " "), std::string::npos) << info.name;
  EXPECT_NE(ops.find("dim=-1, eps=0"), std::string::npos) << ops;
  auto [rc2, targets] = run_cli("targets");
  EXPECT_EQ(rc2, 0);
  for (const Target& t : all_targets())
    EXPECT_NE(targets.find("\n" + t.name + " "), std::string::npos) << t.name;
  EXPECT_NE(targets.find("227 KiB"), std::string::npos) << targets;
}

}  // namespace
}  // namespace weft
