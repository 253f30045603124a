// The fuse step (model/fuse_conv_epilogues.h): a convolution with its bias, residual and clip
// becomes one fused_conv that computes what the bindings it replaced did, by the CPU library's
// post-ops and by the reference semantics; what is not an epilogue stays as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "cpulib/cpu_library.h"
#include "driver/compile_model.h"
#include "exec/channels_last.h"
#include "exec/vm.h"
#include "model/deduce.h"
#include "model/fuse_conv_epilogues.h"
#include "model/parser.h"
#include "model/printer.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

// `first`: clip(conv + bias, 0, 6) as ONNX's Clip imports (relu, neg, shift); `main` adds a 1x1
// convolution whose bias is on the left, a residual and a relu (a ResNet block's end); `shared`
// reads a convolution twice; `partial` clips, then scales (not a clip: it stays); `downsampled`
// sums two convolutions (a residual block with a downsampled shortcut); `chain` feeds
// convolutions into convolutions (the VM keeps those results channels-last), `pooled` through
// poolings; `swish` ends convolutions with SiLU, as exporters write it and as the table's row;
// `wide_bias` adds a bias that is not per channel.
const char* kModule = R"(module cnn
sym 1 <= n <= 4

fn first(x: f32[n, 3, 8, 8], w1: f32[4, 3, 3, 3], b1: f32[1, 4, 1, 1]) -> f32[n, 4, 8, 8] {
  dataflow {
    c1 = conv(x, w1, pads=[1, 1, 1, 1])
    a1 = add(c1, b1)
    r1 = relu(a1)
    n1 = neg(r1)
    s1 = shift(n1, offset=6)
    r2 = relu(s1)
    n2 = neg(r2)
    y1 = shift(n2, offset=6)
  }
  return y1
}

fn main(x: f32[n, 3, 8, 8], w1: f32[4, 3, 3, 3], b1: f32[1, 4, 1, 1], w2: f32[4, 4, 1, 1], b2: f32[1, 4, 1, 1]) -> f32[n, 4, 8, 8] {
  dataflow {
    y1 = first(x, w1, b1)
    c2 = conv(y1, w2)
    a2 = add(b2, c2)
    a3 = add(a2, y1)
    o = relu(a3)
  }
  return o
}

fn shared(x: f32[n, 3, 8, 8], w1: f32[4, 3, 3, 3], b1: f32[1, 4, 1, 1]) -> f32[n, 4, 8, 8] {
  dataflow {
    c1 = conv(x, w1, pads=[1, 1, 1, 1])
    a1 = add(c1, b1)
    r1 = relu(a1)
    o = add(r1, c1)
  }
  return o
}

fn partial(x: f32[n, 3, 8, 8], w1: f32[4, 3, 3, 3], b1: f32[1, 4, 1, 1]) -> f32[n, 4, 8, 8] {
  dataflow {
    c1 = conv(x, w1, pads=[1, 1, 1, 1])
    a1 = add(c1, b1)
    r1 = relu(a1)
    n1 = neg(r1)
    o = scale(n1, factor=2)
  }
  return o
}

fn downsampled(x: f32[n, 3, 8, 8], w1: f32[4, 3, 3, 3], b1: f32[1, 4, 1, 1], w2: f32[4, 3, 1, 1], b2: f32[1, 4, 1, 1]) -> f32[n, 4, 8, 8] {
  dataflow {
    c1 = conv(x, w1, pads=[1, 1, 1, 1])
    a1 = add(c1, b1)
    c2 = conv(x, w2)
    a2 = add(c2, b2)
    s = add(a1, a2)
    o = relu(s)
  }
  return o
}

fn chain(x: f32[n, 3, 8, 8], w1: f32[4, 3, 3, 3], b1: f32[1, 4, 1, 1], w2: f32[4, 4, 3, 3], b2: f32[1, 4, 1, 1], w3: f32[4, 4, 1, 1]) -> f32[n, 4, 8, 8] {
  dataflow {
    c1 = conv(x, w1, pads=[1, 1, 1, 1])
    a1 = add(c1, b1)
    y1 = relu(a1)
    c2 = conv(y1, w2, pads=[1, 1, 1, 1])
    a2 = add(c2, b2)
    y2 = add(a2, y1)
    c3 = conv(y2, w3)
    o = scale(c3, factor=1/2)
  }
  return o
}

fn pooled(x: f32[n, 3, 8, 8], w1: f32[4, 3, 3, 3], b1: f32[1, 4, 1, 1], w2: f32[4, 4, 3, 3], b2: f32[1, 4, 1, 1]) -> f32[n, 4, 1, 1] {
  dataflow {
    c1 = conv(x, w1, pads=[1, 1, 1, 1])
    a1 = add(c1, b1)
    y1 = relu(a1)
    p1 = max_pool(y1, kernel=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c2 = conv(p1, w2, pads=[1, 1, 1, 1])
    a2 = add(c2, b2)
    y2 = relu(a2)
    o = global_avg_pool(y2)
  }
  return o
}

fn swish(x: f32[n, 3, 8, 8], w1: f32[4, 3, 3, 3], b1: f32[1, 4, 1, 1], w2: f32[4, 4, 1, 1], b2: f32[1, 4, 1, 1]) -> f32[n, 4, 8, 8] {
  dataflow {
    c1 = conv(x, w1, pads=[1, 1, 1, 1])
    a1 = add(c1, b1)
    g1 = sigmoid(a1)
    y1 = mul(g1, a1)
    c2 = conv(y1, w2)
    a2 = add(c2, b2)
    o = silu(a2)
  }
  return o
}

fn wide_bias(x: f32[n, 3, 8, 8], w1: f32[4, 3, 3, 3], b1: f32[1, 4, 8, 8]) -> f32[n, 4, 8, 8] {
  dataflow {
    c1 = conv(x, w1, pads=[1, 1, 1, 1])
    a1 = add(c1, b1)
    o = relu(a1)
  }
  return o
}
)";

const Function& function(const Module& m, const std::string& name) {
  const Function* f = m.find_function(name);
  EXPECT_NE(f, nullptr) << name;
  return *f;
}

std::vector<std::string> callees(const Function& f) {
  std::vector<std::string> out;
  for (const Binding& b : f.blocks[0].bindings) out.push_back(b.call.callee);
  return out;
}

VmValue varied(const Shape& shape, double seed, double amplitude) {
  return VmValue{std::make_shared<Tensor<double>>(test::varied_tensor(shape, seed, amplitude))};
}

std::vector<VmValue> arguments(const Function& f) {
  std::vector<VmValue> args;
  double seed = 0.5;
  for (const Param& p : f.params) {
    Shape shape;
    for (const SymExpr& d : *p.type.dims) shape.push_back(d.as_constant().value_or(2));
    // Inputs of amplitude 3 over 27 taps: convolutions well past 6 and below 0.
    args.push_back(varied(shape, seed += 1.3, 3));
  }
  return args;
}

std::vector<double> run(const Module& m, const std::string& name, bool library) {
  VmOptions options;
  options.cpu_library = library;
  Vm vm(m, options);
  return vm.run(name, arguments(function(m, name))).tensor()->data;
}

class FuseConvEpilogues : public testing::Test {
 protected:
  void SetUp() override {
    original_ = parse_module(kModule, "cnn.wmod", prover_);
    fused_ = fuse_conv_epilogues(original_);
  }
  SymProver prover_;
  Module original_;
  FuseResult fused_;
};

TEST_F(FuseConvEpilogues, AClipSpelledInReluNegAndShiftIsOneFusedConv) {
  const Function& f = function(fused_.module, "first");
  ASSERT_EQ(callees(f), std::vector<std::string>{"fused_conv"});
  const Binding& b = f.blocks[0].bindings[0];
  EXPECT_EQ(b.var, "y1");  // readers keep their name
  EXPECT_EQ(b.call.args, (std::vector<std::string>{"x", "w1", "b1"}));
  EXPECT_EQ(std::get<Rational>(b.call.attrs.at("min")), Rational(0));
  EXPECT_EQ(std::get<Rational>(b.call.attrs.at("max")), Rational(6));
  EXPECT_NO_THROW(check_module(fused_.module, prover_));
  // The printed module reads back as itself.
  EXPECT_EQ(parse_module(print_module(fused_.module), "again.wmod", prover_), fused_.module);
}

TEST_F(FuseConvEpilogues, ABiasOnTheLeftAResidualAndAReluFuse) {
  const Function& f = function(fused_.module, "main");
  ASSERT_EQ(callees(f), (std::vector<std::string>{"first", "fused_conv"}));
  const Binding& b = f.blocks[0].bindings[1];
  EXPECT_EQ(b.var, "o");
  EXPECT_EQ(b.call.args, (std::vector<std::string>{"y1", "w2", "b2", "y1"}));
  EXPECT_EQ(std::get<Rational>(b.call.attrs.at("min")), Rational(0));
  EXPECT_EQ(std::get<Rational>(b.call.attrs.at("max")), Rational(int64_t{1} << 62));
  // first, main, partial, downsampled (2), chain (2), pooled (2), swish (2)
  ASSERT_EQ(fused_.fusions.size(), 11u);
  EXPECT_EQ(fused_.fusions[1].bindings, 4);
}

TEST_F(FuseConvEpilogues, SiluAsExportersWriteItAndAsTheTablesRowFuses) {
  const Function& f = function(fused_.module, "swish");
  ASSERT_EQ(callees(f), (std::vector<std::string>{"fused_conv", "fused_conv"}));
  for (const Binding& b : f.blocks[0].bindings) {
    EXPECT_EQ(std::get<SymExpr>(b.call.attrs.at("silu")), SymExpr(1)) << b.var;
    EXPECT_EQ(std::get<Rational>(b.call.attrs.at("max")), Rational(int64_t{1} << 62));
  }
  EXPECT_EQ(f.blocks[0].bindings[0].var, "y1");
  // A clip's fusion says silu=0.
  EXPECT_EQ(std::get<SymExpr>(
                function(fused_.module, "first").blocks[0].bindings[0].call.attrs.at("silu")),
            SymExpr(0));
}

TEST_F(FuseConvEpilogues, WhatIsNotAnEpilogueStays) {
  // c1 is read twice: nothing fuses.
  EXPECT_EQ(callees(function(fused_.module, "shared")), callees(function(original_, "shared")));
  // The relu is a clip; relu then neg is not, and neither is the scale after it.
  EXPECT_EQ(callees(function(fused_.module, "partial")),
            (std::vector<std::string>{"fused_conv", "neg", "scale"}));
  // A bias that is not per channel.
  EXPECT_EQ(callees(function(fused_.module, "wide_bias")),
            callees(function(original_, "wide_bias")));
}

TEST_F(FuseConvEpilogues, OfTwoConvolutionsSummedTheFirstTakesTheSum) {
  const Function& f = function(fused_.module, "downsampled");
  ASSERT_EQ(callees(f), (std::vector<std::string>{"fused_conv", "fused_conv"}));
  EXPECT_EQ(f.blocks[0].bindings[0].var, "a2");
  EXPECT_EQ(f.blocks[0].bindings[1].var, "o");
  EXPECT_EQ(f.blocks[0].bindings[1].call.args, (std::vector<std::string>{"x", "w1", "b1", "a2"}));
  EXPECT_NO_THROW(check_module(fused_.module, prover_));
}

TEST_F(FuseConvEpilogues, ConvolutionsReadByConvolutionsAloneAreChannelsLast) {
  const Function& f = function(fused_.module, "chain");
  ASSERT_EQ(callees(f), (std::vector<std::string>{"fused_conv", "fused_conv", "conv", "scale"}));
  if (cpu_library_name().empty()) {  // weft's own convolutions are row-major
    EXPECT_TRUE(channels_last_layouts(f).empty());
    return;
  }
  const ChannelsLast x = operand_channels_last(0), residual = operand_channels_last(3);
  // y1 feeds y2 as x and residual; y2 feeds the plain conv; c3 is read by a scale.
  EXPECT_EQ(channels_last_layouts(f),
            (std::vector<ChannelsLast>{
                kResultChannelsLast, static_cast<ChannelsLast>(x | residual | kResultChannelsLast),
                x, 0}));
  // A function's result and what a non-convolution reads stay row-major.
  EXPECT_EQ(channels_last_layouts(function(fused_.module, "downsampled")),
            (std::vector<ChannelsLast>{kResultChannelsLast, residual}));
  EXPECT_EQ(channels_last_layouts(function(fused_.module, "first")), std::vector<ChannelsLast>{0});
  // Poolings read and write it too; the global pool's result is the function's.
  const ChannelsLast in_and_out = static_cast<ChannelsLast>(x | kResultChannelsLast);
  EXPECT_EQ(channels_last_layouts(function(fused_.module, "pooled")),
            (std::vector<ChannelsLast>{kResultChannelsLast, in_and_out, in_and_out, x}));
}

TEST_F(FuseConvEpilogues, FusedFunctionsComputeWhatTheOriginalsDid) {
  // The inputs are not trivial: the clip's both bounds are met, and values between them.
  const std::vector<double> clipped = run(original_, "first", false);
  const auto count = [&](auto pred) { return std::count_if(clipped.begin(), clipped.end(), pred); };
  ASSERT_GT(count([](double v) { return v == 0; }), 10);
  ASSERT_GT(count([](double v) { return v == 6; }), 10);
  ASSERT_GT(count([](double v) { return v > 0.5 && v < 5.5; }), 10);
  for (const char* name : {"first", "main", "partial", "shared", "downsampled", "chain", "pooled",
                           "swish", "wide_bias"})
    for (bool library : {false, true}) {
      const std::vector<double> want = run(original_, name, library);
      const std::vector<double> got = run(fused_.module, name, library);
      ASSERT_EQ(got.size(), want.size());
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::abs(got[i] - want[i]) / (1 + std::abs(want[i])));
      EXPECT_LT(worst, 1e-5) << name << (library ? " with the CPU library" : " without");
    }
}

TEST_F(FuseConvEpilogues, TheCompileFusesOnACpuTargetOnly) {
  ModelCompileOptions options;
  options.bindings = {SymBinding{{"n", 2}}};
  options.search.time_budget_s = 1;
  options.fuse_conv_epilogues = true;
  options.search.target = "cpu";
  const ModelCompileResult cpu = compile_model(original_, prover_, options);
  EXPECT_EQ(cpu.conv_fusions.empty(), cpu_library_name().empty());
  options.search.target = "h100";
  EXPECT_TRUE(compile_model(original_, prover_, options).conv_fusions.empty());
  options.search.target = "cpu";
  options.fuse_conv_epilogues = false;
  EXPECT_TRUE(compile_model(original_, prover_, options).conv_fusions.empty());
}

}  // namespace
}  // namespace weft
