// The VM's f32 lane for model-only operators (exec/host_elementwise.h, ModelOpImpl::eval_f32) and
// movements (exec/host_movement.h): `where` with three broadcast operands from either lane,
// layer_norm / softmax_safe / slice in f32, gather reading its table in place, concat and repeat,
// and pow's squares and cubes, each equal to the f64 semantics (rounded to f32).
#include <gtest/gtest.h>

#include <cmath>

#include "exec/host_elementwise.h"
#include "exec/host_movement.h"
#include "model/model_ops.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

Tensor<float> to_f32(const Tensor<double>& t) {
  Tensor<float> out(t.shape, 0.0f);
  for (size_t i = 0; i < t.data.size(); ++i) out.data[i] = static_cast<float>(t.data[i]);
  return out;
}

TEST(HostF32ModelOps, WhereBroadcastsThreeOperandsFromEitherLane) {
  // cond in the f64 lane (a bool tensor), a and b in the f32 lane, each broadcast differently.
  Tensor<double> cond({2, 1, 3}, 0.0);
  for (size_t i = 0; i < cond.data.size(); ++i) cond.data[i] = (i % 2 == 0) ? 1.0 : 0.0;
  const Tensor<float> a = to_f32(test::varied_tensor({2, 4, 3}, 0.4));
  const Tensor<float> b = to_f32(test::varied_tensor({1, 4, 1}, 1.9));
  const std::vector<HostOperand> in = {HostOperand::of(cond.shape, cond.data.data()),
                                       HostOperand::of(a.shape, a.data.data()),
                                       HostOperand::of(b.shape, b.data.data())};
  Tensor<float> got;
  ASSERT_TRUE(elementwise_on_host_f32(OpKind::where, in, Attrs{}, fresh_into(got)));
  ASSERT_EQ(got.shape, (Shape{2, 4, 3}));
  int from_a = 0, from_b = 0;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        const bool pick_a = cond.data[static_cast<size_t>(i * 3 + k)] != 0;
        const float want = pick_a ? a.data[static_cast<size_t>((i * 4 + j) * 3 + k)]
                                  : b.data[static_cast<size_t>(j)];
        (pick_a ? from_a : from_b) += 1;
        EXPECT_EQ(got.data[static_cast<size_t>((i * 4 + j) * 3 + k)], want) << i << j << k;
      }
  EXPECT_GT(from_a, 0);
  EXPECT_GT(from_b, 0);
  // The f64 path takes it too (no one-operator µGraph), with the same values.
  const Tensor<double> ad = test::varied_tensor({2, 4, 3}, 0.4),
                       bd = test::varied_tensor({1, 4, 1}, 1.9);
  const std::optional<Tensor<double>> f64 =
      elementwise_on_host(OpKind::where, {&cond, &ad, &bd}, Attrs{});
  ASSERT_TRUE(f64);
  for (size_t i = 0; i < got.data.size(); ++i)
    EXPECT_EQ(static_cast<float>(f64->data[i]), got.data[i]) << i;
  // Operands whose ranks differ are left to the slow path, which reports them.
  const Tensor<double> flat({3}, 1.0);
  EXPECT_FALSE(elementwise_on_host(OpKind::where, {&flat, &ad, &bd}, Attrs{}));
}

TEST(HostF32ModelOps, LayerNormAndSoftmaxInF32EqualTheF64SemanticsRounded) {
  const Tensor<double> x = test::varied_tensor({3, 5, 8}, 2.3, 3.0);
  const Tensor<float> xf = to_f32(x);
  const Tensor<double> xr = [&] {  // the f32 operand's values, exactly, in f64
    Tensor<double> t(x.shape, 0.0);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = xf.data[i];
    return t;
  }();
  struct Case {
    OpKind kind;
    Attrs attrs;
  };
  Attrs ln, sm;
  ln.set("eps", Rational::make(1, 100000).value());
  sm.set("dim", int64_t{1});
  for (const Case& c : {Case{OpKind::layer_norm, ln}, Case{OpKind::softmax_safe, sm}}) {
    const ModelOpImpl* impl = model_impl(c.kind);
    ASSERT_TRUE(impl && impl->eval && impl->eval_f32) << op_info(c.kind).name;
    const Tensor<double> want = impl->eval({&xr}, c.attrs);
    const Tensor<float> got = impl->eval_f32({HostOperand::of(xf.shape, xf.data.data())}, c.attrs);
    ASSERT_EQ(got.shape, want.shape);
    double largest = 0;
    for (double v : want.data) largest = std::max(largest, std::abs(v));
    ASSERT_GT(largest, 0.1);  // not a trivial result
    for (size_t i = 0; i < want.data.size(); ++i)
      EXPECT_EQ(got.data[i], static_cast<float>(want.data[i])) << op_info(c.kind).name << " " << i;
  }
}

// A gather's table is read in place from the f32 lane (an embedding's weights, converted to f64
// at every call before), its indices from the f64 lane, exactly; a bad index is still an error.
TEST(HostF32ModelOps, GatherReadsTheTableInPlace) {
  const Tensor<double> table = test::varied_tensor({6, 4}, 0.8);
  const Tensor<float> tf = to_f32(table);
  Tensor<double> ids({2, 3}, 0.0);
  const double picks[] = {5, 0, 3, -1, 2, 2};
  for (size_t i = 0; i < 6; ++i) ids.data[i] = picks[i];
  Attrs attrs;
  attrs.set("axis", int64_t{0});
  const ModelOpImpl* impl = model_impl(OpKind::gather);
  ASSERT_TRUE(impl && impl->eval_f32);
  const Tensor<float> got = impl->eval_f32(
      {HostOperand::of(tf.shape, tf.data.data()), HostOperand::of(ids.shape, ids.data.data())},
      attrs);
  const Tensor<double> tr = [&] {
    Tensor<double> t(table.shape, 0.0);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = tf.data[i];
    return t;
  }();
  const Tensor<double> want = impl->eval({&tr, &ids}, attrs);
  ASSERT_EQ(got.shape, (Shape{2, 3, 4}));
  ASSERT_EQ(got.shape, want.shape);
  for (size_t i = 0; i < want.data.size(); ++i)
    EXPECT_EQ(got.data[i], static_cast<float>(want.data[i])) << i;
  EXPECT_EQ(got.data[3 * 4], tf.data[5 * 4]);  // row 3 of the result is table row -1 = 5
  ids.data[4] = 6;
  EXPECT_THROW(impl->eval_f32({HostOperand::of(tf.shape, tf.data.data()),
                               HostOperand::of(ids.shape, ids.data.data())},
                              attrs),
               UserError);
}

// A slice along a middle dim and along the last, from either lane, equals the f64 semantics;
// a range outside the dim is still an error.
TEST(HostF32ModelOps, SliceCopiesRunsFromEitherLane) {
  const Tensor<double> x = test::varied_tensor({2, 5, 3}, 1.3);
  const Tensor<float> xf = to_f32(x);
  const ModelOpImpl* impl = model_impl(OpKind::slice);
  ASSERT_TRUE(impl && impl->eval && impl->eval_f32);
  for (int64_t dim : {1, 2, -1}) {
    Attrs attrs;
    attrs.set("dim", dim);
    attrs.set("start", int64_t{1});
    attrs.set("size", int64_t{2});
    const Tensor<double> want = impl->eval({&x}, attrs);
    const Tensor<float> from_f32 =
        impl->eval_f32({HostOperand::of(xf.shape, xf.data.data())}, attrs);
    const Tensor<float> from_f64 = impl->eval_f32({HostOperand::of(x.shape, x.data.data())}, attrs);
    ASSERT_EQ(from_f32.shape, want.shape) << dim;
    ASSERT_EQ(from_f64.shape, want.shape) << dim;
    for (size_t i = 0; i < want.data.size(); ++i) {
      EXPECT_EQ(from_f32.data[i], static_cast<float>(want.data[i])) << dim << " " << i;
      EXPECT_EQ(from_f64.data[i], static_cast<float>(want.data[i])) << dim << " " << i;
    }
  }
  EXPECT_EQ(impl->eval_f32({HostOperand::of(xf.shape, xf.data.data())},
                           [] {
                             Attrs a;
                             a.set("dim", int64_t{1});
                             a.set("start", int64_t{1});
                             a.set("size", int64_t{2});
                             return a;
                           }())
                .data[0],
            xf.data[3]);  // element [0, 1, 0]
  Attrs outside;
  outside.set("dim", int64_t{1});
  outside.set("start", int64_t{4});
  outside.set("size", int64_t{2});
  EXPECT_THROW(impl->eval_f32({HostOperand::of(xf.shape, xf.data.data())}, outside), UserError);
}

// concat of operands from both lanes, repeat and split, element by element against their
// definitions;
// operands the shape rule refuses are left to the caller's path.
TEST(HostF32ModelOps, ConcatRepeatAndSplitMoveRuns) {
  const Tensor<float> a = to_f32(test::varied_tensor({2, 3, 2}, 0.7));
  const Tensor<double> b = test::varied_tensor({2, 1, 2}, 1.7);
  Attrs along1;
  along1.set("dim", int64_t{1});
  Tensor<float> got;
  ASSERT_TRUE(movement_on_host_f32(
      OpKind::concat,
      {HostOperand::of(a.shape, a.data.data()), HostOperand::of(b.shape, b.data.data())}, along1,
      fresh_into(got)));
  ASSERT_EQ(got.shape, (Shape{2, 4, 2}));
  for (size_t i = 0; i < 2; ++i)
    for (size_t j = 0; j < 4; ++j)
      for (size_t k = 0; k < 2; ++k) {
        const float want =
            j < 3 ? a.data[(i * 3 + j) * 2 + k] : static_cast<float>(b.data[i * 2 + k]);
        EXPECT_EQ(got.data[(i * 4 + j) * 2 + k], want) << i << j << k;
      }
  Attrs tiled;
  tiled.set("dim", int64_t{-2});
  tiled.set("times", int64_t{3});
  Tensor<float> rep;
  ASSERT_TRUE(movement_on_host_f32(OpKind::repeat, {HostOperand::of(a.shape, a.data.data())}, tiled,
                                   fresh_into(rep)));
  ASSERT_EQ(rep.shape, (Shape{2, 9, 2}));
  for (size_t i = 0; i < 2; ++i)
    for (size_t j = 0; j < 9; ++j)
      for (size_t k = 0; k < 2; ++k)
        EXPECT_EQ(rep.data[(i * 9 + j) * 2 + k], a.data[(i * 3 + j % 3) * 2 + k]) << i << j << k;
  // split, the inverse of the concat above: three parts of a along dim 1 (from the f64 lane).
  const Tensor<double> ad = test::varied_tensor({2, 3, 2}, 0.7);
  Attrs thirds;
  thirds.set("dim", int64_t{1});
  thirds.set("parts", int64_t{3});
  std::optional<std::vector<Tensor<float>>> parts =
      split_on_host_f32(HostOperand::of(ad.shape, ad.data.data()), thirds);
  ASSERT_TRUE(parts);
  ASSERT_EQ(parts->size(), 3u);
  for (size_t p = 0; p < 3; ++p) {
    ASSERT_EQ((*parts)[p].shape, (Shape{2, 1, 2}));
    for (size_t i = 0; i < 2; ++i)
      for (size_t k = 0; k < 2; ++k)
        EXPECT_EQ((*parts)[p].data[i * 2 + k], a.data[(i * 3 + p) * 2 + k]) << p << i << k;
  }
  thirds.set("parts", int64_t{2});  // 3 does not split in two: left to the caller's path
  EXPECT_FALSE(split_on_host_f32(HostOperand::of(ad.shape, ad.data.data()), thirds));
  const Tensor<float> c = to_f32(test::varied_tensor({3, 3, 2}, 0.2));
  Tensor<float> refused;
  EXPECT_FALSE(movement_on_host_f32(
      OpKind::concat,
      {HostOperand::of(a.shape, a.data.data()), HostOperand::of(c.shape, c.data.data())}, along1,
      fresh_into(refused)));
}

// pow's squares and cubes skip std::pow; on f32 values the results are pow's, rounded to f32.
TEST(HostF32ModelOps, PowSquaresAndCubesArePowsValues) {
  const RealFn pow_fn = op_info(OpKind::pow).real;
  ASSERT_TRUE(pow_fn);
  const Tensor<float> x = to_f32(test::varied_tensor({257}, 0.9, 40.0));
  int differ_from_x = 0;
  for (double y : {2.0, 3.0, 0.5, -1.0}) {
    for (float v : x.data) {
      if (y < 0 && v == 0) continue;
      ScalarArgs s{.x = y == 0.5 ? std::fabs(v) : static_cast<double>(v), .y = y};
      const double got = pow_fn(s), want = std::pow(s.x, y);
      EXPECT_EQ(static_cast<float>(got), static_cast<float>(want)) << s.x << "^" << y;
      differ_from_x += got != s.x;
    }
  }
  EXPECT_GT(differ_from_x, 900);  // the inputs are not trivial
  ScalarArgs nan{.x = std::nan(""), .y = 3.0};
  EXPECT_TRUE(std::isnan(pow_fn(nan)));
}

}  // namespace
}  // namespace weft
