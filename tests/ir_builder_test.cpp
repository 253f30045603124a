// Unit tests of the operator table, rationals and the type-inferring graph builder.
#include <gtest/gtest.h>

#include "core/rational.h"
#include "ir/graph.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

TEST(Rational, ParsesAndPrintsExactly) {
  EXPECT_EQ(Rational::parse("1e-6")->den(), 1000000);
  EXPECT_EQ(Rational::parse("1/4096")->den(), 4096);
  EXPECT_EQ(Rational::parse("-0.5")->num(), -1);
  EXPECT_EQ(Rational::parse("2.5E3")->num(), 2500);
  EXPECT_FALSE(Rational::parse("1/0"));
  EXPECT_FALSE(Rational::parse("abc"));
  EXPECT_FALSE(Rational::parse("1e99999"));
  for (const char* s : {"3", "-7", "0.5", "1e-6", "1/4096", "-3/8", "0.001", "123.25", "-1e-9"}) {
    auto r = Rational::parse(s);
    ASSERT_TRUE(r) << s;
    auto back = Rational::parse(r->str());
    ASSERT_TRUE(back) << r->str();
    EXPECT_EQ(*back, *r) << s << " printed as " << r->str();
  }
}

TEST(OpTable, EveryOpIsFoundByName) {
  for (const OpInfo& info : all_ops()) {
    auto k = op_by_name(info.name);
    ASSERT_TRUE(k) << info.name;
    EXPECT_EQ(*k, info.kind);
  }
  EXPECT_FALSE(op_by_name("nonexistent"));
}

TEST(Builder, InfersFusedRmsNormLinearTypes) {
  GraphBuilder block(Level::block);
  block.set_block_params({96, 1, 1}, 128, 16);
  ValueId X = block.add_input("X", {DType::f16, {16, 4096}});
  ValueId W = block.add_input("W", {DType::f16, {4096, 6144}});
  ValueId x = block.add(OpKind::iter, {X}, {{"fmap", int64_t{1}}}, "x");
  ValueId w =
      block.add(OpKind::iter, {W}, {{"imap", std::vector<int64_t>{1}}, {"fmap", int64_t{0}}}, "w");
  EXPECT_EQ(block.graph().type(x).shape, (Shape{16, 256}));
  EXPECT_EQ(block.graph().type(w).shape, (Shape{256, 64}));
  ValueId m = block.add(OpKind::matmul, {x, w}, {}, "m");
  ValueId ma = block.add(OpKind::accum_sum, {m}, {}, "ma");
  ValueId y =
      block.add(OpKind::save, {ma}, {{"omap", std::vector<int64_t>{1}}}, "O", {}, Stage::post);
  EXPECT_EQ(block.graph().type(y).shape, (Shape{16, 6144}));

  GraphBuilder kernel(Level::kernel, "p");
  ValueId KX = kernel.add_input("X", {DType::f16, {16, 4096}});
  ValueId KW = kernel.add_input("W", {DType::f16, {4096, 6144}});
  auto outs = kernel.add_nested(OpKind::kernel, {KX, KW}, std::move(block).finish());
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(kernel.graph().type(outs[0]).shape, (Shape{16, 6144}));
  EXPECT_EQ(kernel.graph().value(outs[0]).name, "O");
}

TEST(Builder, ReportsShapeErrorsWithLocation) {
  GraphBuilder g(Level::kernel);
  ValueId a = g.add_input("A", {DType::f32, {4, 8}});
  ValueId b = g.add_input("B", {DType::f32, {4, 8}});
  try {
    g.add(OpKind::matmul, {a, b}, {}, "C", SourceLoc{"f.weft", 3, 5});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.loc().line, 3);
    EXPECT_NE(std::string(e.what()).find("f.weft:3:5: error: matmul"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(g.add(OpKind::sum, {a}, {{"dim", int64_t{5}}}), UserError);
  EXPECT_THROW(g.add(OpKind::sum, {a}, {{"dim", int64_t{1}}, {"to", int64_t{3}}}), UserError);
  EXPECT_THROW(g.add(OpKind::iter, {a}), UserError);  // block-level op in a kernel graph
  ValueId s = g.add(OpKind::sum, {a}, {{"dim", int64_t{-1}}});
  EXPECT_EQ(g.graph().ops.back().attrs.get_int("dim"), 1);
  EXPECT_EQ(g.graph().type(s).shape, (Shape{4, 1}));
}

}  // namespace
}  // namespace weft
