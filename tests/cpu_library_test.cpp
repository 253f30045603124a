// The CPU library operators (cpulib/) against weft's own reference code at test size: oneDNN's
// convolution against the model operator's f64 semantics over 1 to 3 spatial dims, groups,
// strides, dilations and asymmetric pads; its pooling (ceil_mode, padding counted or not, in
// either layout); its matmul against the interpreter with broadcast batch
// dims; and the VM's elementwise path (exec/host_elementwise.h) bit for bit against the
// interpreter it replaces; each also on operands of the VM's f32 lane.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <random>

#include "cpulib/cpu_library.h"
#include "exec/host_elementwise.h"
#include "interp/interpreter.h"
#include "ir/graph.h"
#include "model/model_ops.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

Tensor<double> random_tensor(Shape shape, uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor<double> t(std::move(shape), 0.0);
  // Values an f32 holds exactly, as the VM stores them.
  for (double& x : t.data) x = static_cast<float>(u(rng));
  return t;
}

// The largest difference over the largest magnitude of `want` (0 for equal tensors).
double scaled_error(const Tensor<double>& got, const Tensor<double>& want) {
  EXPECT_EQ(got.shape, want.shape);
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.data.size() && i < got.data.size(); ++i) {
    diff = std::max(diff, std::abs(got.data[i] - want.data[i]));
    scale = std::max(scale, std::abs(want.data[i]));
  }
  // Numeric tests first check that their data is not trivial.
  EXPECT_GT(scale, 0.1) << "an all-zero reference proves nothing";
  return scale > 0 ? diff / scale : diff;
}

Attrs with_defaults(OpKind kind, Attrs attrs) {
  for (const AttrSpec& s : op_info(kind).attrs)
    if (!attrs.has(s.name)) attrs.set(s.name, s.default_value);
  return attrs;
}

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
};

TEST(CpuLibrary, ConvolutionMatchesTheModelOperatorsF64Semantics) {
  if (cpu_library_name().empty()) GTEST_SKIP() << "weft was built without oneDNN";
  const std::vector<ConvCase> cases = {
      {{1, 3, 9, 9}, {8, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1},   // a stem
      {{2, 8, 7, 7}, {8, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 8},   // depthwise
      {{1, 8, 6, 6}, {16, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},  // pointwise
      {{1, 6, 8, 8}, {6, 2, 3, 3}, {1, 2}, {0, 1, 2, 1}, {2, 1}, 3},   // grouped, odd pads
      {{2, 4, 11}, {5, 4, 3}, {2}, {1, 0}, {3}, 1},                    // 1 spatial dim
      {{1, 2, 5, 6, 4}, {4, 2, 2, 3, 1}, {1, 2, 1}, {1, 0, 0, 0, 1, 0}, {1, 1, 1}, 1},  // 3
  };
  const ModelOpImpl* reference = model_impl(OpKind::conv);
  uint64_t seed = 1;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.w));
    Tensor<double> x = random_tensor(c.x, seed++), w = random_tensor(c.w, seed++);
    Attrs attrs;
    attrs.set("strides", c.strides);
    attrs.set("pads", c.pads);
    attrs.set("dilations", c.dilations);
    attrs.set("group", c.group);
    attrs = with_defaults(OpKind::conv, attrs);
    std::optional<Tensor<double>> got = run_on_cpu_library(OpKind::conv, {&x, &w}, attrs);
    ASSERT_TRUE(got) << "oneDNN refused a convolution it implements";
    EXPECT_LT(scaled_error(*got, reference->eval({&x, &w}, attrs)), 1e-5);
    // The f32 lane: the input given in f32 (the weight in f64) gives the same floats.
    Tensor<float> x32(x.shape, std::vector<float>(x.data.begin(), x.data.end())), lane;
    ASSERT_TRUE(run_on_cpu_library_f32(OpKind::conv, {operand_of(x32), operand_of(w)}, attrs,
                                       fresh_into(lane)));
    EXPECT_EQ(std::vector<double>(lane.data.begin(), lane.data.end()), got->data);
  }
}

struct PoolCase {
  OpKind kind;
  Shape x;
  std::vector<int64_t> kernel, strides, pads, dilations;
  int64_t ceil_mode, include_pad;
};

// A 4-D tensor's values in channels-last order and back (what the VM keeps between them).
Tensor<float> nhwc_of(const Tensor<double>& t) {
  Tensor<float> out(t.shape, 0.0f);
  const int64_t c = t.shape[1], plane = t.shape[2] * t.shape[3];
  for (int64_t i = 0; i < t.shape[0]; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < plane; ++p)
        out.data[static_cast<size_t>((i * plane + p) * c + ch)] =
            static_cast<float>(t.data[static_cast<size_t>((i * c + ch) * plane + p)]);
  return out;
}

TEST(CpuLibrary, PoolingMatchesTheModelOperatorsF64SemanticsInEitherLayout) {
  if (cpu_library_name().empty()) GTEST_SKIP() << "weft was built without oneDNN";
  using K = OpKind;
  const std::vector<PoolCase> cases = {
      {K::max_pool, {1, 8, 16, 16}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 0},  // ResNet's
      {K::max_pool, {2, 3, 9, 10}, {2, 3}, {2, 2}, {0, 1, 1, 0}, {2, 1}, 1, 0},   // ceil, dilated
      {K::avg_pool, {1, 4, 9, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 1, 0},        // ceil_mode
      {K::avg_pool, {1, 4, 8, 8}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, 0, 1},        // include pad
      {K::avg_pool, {2, 3, 12}, {4}, {3}, {1, 2}, {}, 0, 0},                      // 1 spatial
      {K::global_avg_pool, {2, 16, 5, 7}, {}, {}, {}, {}, 0, 0},
  };
  uint64_t seed = 40;
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(std::string(op_info(c.kind).name) + " " + shape_str(c.x));
    const Tensor<double> x = random_tensor(c.x, seed++);
    Attrs attrs;
    if (c.kind != K::global_avg_pool) {
      attrs.set("kernel", c.kernel);
      attrs.set("strides", c.strides);
      attrs.set("pads", c.pads);
      attrs.set("ceil_mode", c.ceil_mode);
      if (c.kind == K::max_pool) attrs.set("dilations", c.dilations);
      if (c.kind == K::avg_pool) attrs.set("count_include_pad", c.include_pad);
    }
    attrs = with_defaults(c.kind, attrs);
    const Tensor<double> want = model_impl(c.kind)->eval({&x}, attrs);
    std::optional<Tensor<double>> got = run_on_cpu_library(c.kind, {&x}, attrs);
    ASSERT_TRUE(got) << "oneDNN refused a pooling it implements";
    EXPECT_LT(scaled_error(*got, want), 1e-6);
    if (c.x.size() != 4) continue;
    // Channels-last in, out or both: the same values, stored as the VM keeps them.
    const Tensor<float> x_plain(x.shape, std::vector<float>(x.data.begin(), x.data.end()));
    const Tensor<float> x_nhwc = nhwc_of(x), want_nhwc = nhwc_of(want);
    const Tensor<float> want_plain(want.shape,
                                   std::vector<float>(want.data.begin(), want.data.end()));
    for (bool in_nhwc : {false, true})
      for (bool out_nhwc : {false, true}) {
        SCOPED_TRACE(
            fmt::format("x {}, result {}", in_nhwc ? "NHWC" : "NCHW", out_nhwc ? "NHWC" : "NCHW"));
        Tensor<float> y;
        ASSERT_TRUE(run_on_cpu_library_f32(
            c.kind, {operand_of(in_nhwc ? x_nhwc : x_plain)}, attrs, fresh_into(y),
            static_cast<ChannelsLast>((in_nhwc ? operand_channels_last(0) : 0) |
                                      (out_nhwc ? kResultChannelsLast : 0))));
        const Tensor<float>& expected = out_nhwc ? want_nhwc : want_plain;
        ASSERT_EQ(y.shape, expected.shape);
        for (size_t i = 0; i < y.data.size(); ++i)
          ASSERT_NEAR(y.data[i], expected.data[i], 1e-6) << "element " << i;
      }
  }
}

TEST(CpuLibrary, MatmulMatchesTheInterpreterWithBroadcastBatchDims) {
  if (cpu_library_name().empty()) GTEST_SKIP() << "weft was built without oneDNN";
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{7, 16}, {16, 5}},
      {{3, 4, 8}, {3, 8, 6}},
      {{2, 1, 5, 8}, {1, 3, 8, 4}},  // both operands broadcast
      {{1, 9, 32}, {4, 32, 2}},
  };
  uint64_t seed = 10;
  for (const auto& [sa, sb] : cases) {
    SCOPED_TRACE(shape_str(sa) + " x " + shape_str(sb));
    Tensor<double> a = random_tensor(sa, seed++), b = random_tensor(sb, seed++);
    std::optional<Tensor<double>> got = run_on_cpu_library(OpKind::matmul, {&a, &b}, {});
    ASSERT_TRUE(got);
    GraphBuilder gb(Level::kernel, "matmul");
    ValueId ia = gb.add_input("a", TensorType{DType::f32, sa});
    ValueId ib = gb.add_input("b", TensorType{DType::f32, sb});
    gb.add_output(gb.add_op(OpKind::matmul, {ia, ib}).at(0));
    Tensor<double> want = evaluate_real(std::move(gb).finish(), {a, b}, false).at(0);
    EXPECT_LT(scaled_error(*got, want), 1e-5);
  }
}

// Weights given with their owner are prepared once in the primitive's layout and kept while the
// owner lives; the results equal the per-call path's bit for bit, and a tensor made after the
// owner died (possibly at its address, with other values) never gets the dead one's weights.
TEST(CpuLibrary, WeightsArePreparedOnceWhileTheirTensorLives) {
  if (cpu_library_name().empty()) GTEST_SKIP() << "weft was built without oneDNN";
  Attrs attrs = with_defaults(OpKind::conv, {});
  attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  const Tensor<double> x = random_tensor({1, 8, 6, 6}, 31);
  auto w = std::make_shared<const Tensor<double>>(random_tensor({16, 8, 3, 3}, 32));
  const std::optional<Tensor<double>> per_call =
      run_on_cpu_library(OpKind::conv, {&x, w.get()}, attrs);
  ASSERT_TRUE(per_call);
  const size_t before = onednn_prepared_weights_kept();
  for (int run = 0; run < 3; ++run) {
    const TensorOwners owners = {nullptr, &w};
    std::optional<Tensor<double>> got =
        run_on_cpu_library(OpKind::conv, {&x, w.get()}, attrs, &owners);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->data, per_call->data) << "run " << run;
  }
  EXPECT_EQ(onednn_prepared_weights_kept(), before + 1) << "one entry for three runs";

  // The owner dies; new weights (with other values) take its place.
  const Tensor<double>* old_address = w.get();
  w.reset();
  auto w2 = std::make_shared<const Tensor<double>>(random_tensor({16, 8, 3, 3}, 33));
  const std::optional<Tensor<double>> want =
      run_on_cpu_library(OpKind::conv, {&x, w2.get()}, attrs);
  const TensorOwners owners2 = {nullptr, &w2};
  std::optional<Tensor<double>> got =
      run_on_cpu_library(OpKind::conv, {&x, w2.get()}, attrs, &owners2);
  ASSERT_TRUE(got && want);
  EXPECT_EQ(got->data, want->data)
      << (w2.get() == old_address ? "at the dead owner's address" : "at a new address");
  EXPECT_NE(got->data, per_call->data);
  EXPECT_EQ(onednn_prepared_weights_kept(), before + 1) << "the dead owner's entry was dropped";

  // A matmul's weight matrix (no batch dims of its own) is kept too, an activation's not.
  const Tensor<double> a = random_tensor({1, 5, 8}, 34);
  auto m = std::make_shared<const Tensor<double>>(random_tensor({1, 8, 4}, 35));
  auto act = std::make_shared<const Tensor<double>>(random_tensor({3, 8, 4}, 36));
  const Tensor<double> a3 = random_tensor({3, 5, 8}, 37);
  const TensorOwners mo = {nullptr, &m}, ao = {nullptr, &act};
  EXPECT_EQ(run_on_cpu_library(OpKind::matmul, {&a, m.get()}, {}, &mo)->data,
            run_on_cpu_library(OpKind::matmul, {&a, m.get()}, {})->data);
  EXPECT_EQ(onednn_prepared_weights_kept(), before + 2);
  EXPECT_TRUE(run_on_cpu_library(OpKind::matmul, {&a3, act.get()}, {}, &ao));
  EXPECT_EQ(onednn_prepared_weights_kept(), before + 2);
}

TEST(CpuLibrary, CallsItDoesNotTakeAreLeftToTheCaller) {
  Tensor<double> a = random_tensor({3, 4}, 1), b = random_tensor({5, 2}, 2);
  EXPECT_FALSE(run_on_cpu_library(OpKind::matmul, {&a, &b}, {}));  // contraction mismatch
  EXPECT_FALSE(run_on_cpu_library(OpKind::add, {&a, &a}, {}));     // no library operator
  Tensor<double> x = random_tensor({1, 6, 5, 5}, 3), w = random_tensor({4, 4, 3, 3}, 4);
  Attrs attrs = with_defaults(OpKind::conv, {});
  attrs.set("group", int64_t{2});  // 6 channels are not 2 groups of 4
  EXPECT_FALSE(run_on_cpu_library(OpKind::conv, {&x, &w}, attrs));
}

TEST(HostElementwise, EqualsTheInterpretersF32ResultBitForBit) {
  int checked = 0;
  for (const OpInfo& info : all_ops()) {
    const bool unary = info.op_class == OpClass::unary, binary = info.op_class == OpClass::binary;
    if ((!unary && !binary) || !info.real || !(info.levels & kAtKernel)) continue;
    SCOPED_TRACE(info.name);
    Attrs attrs;
    if (const AttrSpec* c = rational_attr(info)) attrs.set(c->name, *Rational::make(3, 4));
    // Positive operands keep sqrt, log and div finite; a broadcast second operand for binaries.
    Tensor<double> a = random_tensor({2, 3, 5}, 21, 0.25, 2.0);
    Tensor<double> b = random_tensor({2, 1, 5}, 22, 0.25, 2.0);
    std::vector<Tensor<double>> inputs = {a};
    if (binary) inputs.push_back(b);
    GraphBuilder gb(Level::kernel, "one");
    std::vector<ValueId> ids;
    for (size_t i = 0; i < inputs.size(); ++i)
      ids.push_back(gb.add_input(i ? "b" : "a", TensorType{DType::f32, inputs[i].shape}));
    gb.add_output(gb.add_op(info.kind, ids, attrs).at(0));
    Tensor<double> want = evaluate_real(std::move(gb).finish(), inputs, true).at(0);
    std::vector<const Tensor<double>*> in = {&a};
    if (binary) in.push_back(&b);
    std::optional<Tensor<double>> got = elementwise_on_host(info.kind, in, attrs);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->shape, want.shape);
    EXPECT_EQ(got->data, want.data);
    // The f32 lane: the first operand in f32, the second (broadcast) in f64, the result in f32.
    Tensor<float> a32(a.shape, std::vector<float>(a.data.begin(), a.data.end())), lane;
    std::vector<HostOperand> operands = {operand_of(a32)};
    if (binary) operands.push_back(operand_of(b));
    ASSERT_TRUE(elementwise_on_host_f32(info.kind, operands, attrs, fresh_into(lane)));
    EXPECT_EQ(lane.shape, want.shape);
    EXPECT_EQ(std::vector<double>(lane.data.begin(), lane.data.end()), want.data);
    ++checked;
  }
  EXPECT_GE(checked, 9);  // exp sqr sqrt silu scale shift add sub mul div neg ...
  Tensor<double> a = random_tensor({2, 3}, 1), c = random_tensor({4, 3}, 2);
  EXPECT_FALSE(elementwise_on_host(OpKind::add, {&a, &c}, {})) << "shapes the rule refuses";
  EXPECT_FALSE(elementwise_on_host(OpKind::matmul, {&a, &c}, {})) << "not elementwise";
}

}  // namespace
}  // namespace weft
