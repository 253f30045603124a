// The VM's f32 lane for model-only operators (exec/host_elementwise.h, ModelOpImpl::eval_f32):
// `where` with three broadcast operands from either lane, layer_norm / softmax_safe in f32, and
// gather reading its table in place, each equal to the f64 semantics (rounded to f32).
#include <gtest/gtest.h>

#include <cmath>

#include "exec/host_elementwise.h"
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

}  // namespace
}  // namespace weft
