// Storage dtypes in the model layer: the rounding to f16/bf16 against known bit patterns, the VM
// storing every result and argument in its dtype, and .npz outputs in the closest NumPy type.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/dtype_convert.h"
#include "exec/npz.h"
#include "exec/run_io.h"
#include "exec/vm.h"
#include "model/parser.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");

namespace weft {
namespace {

TEST(ModelDtype, RoundingMatchesKnownBitPatterns) {
  EXPECT_EQ(float_to_f16_bits(0.1f), 0x2E66);
  EXPECT_EQ(stored_value(0.1, DType::f16), 0x1.998p-4);  // 0.0999755859375
  // 1/3 in f32 is 0x3EAAAAAB: the dropped 0xAAAB is above half, so bf16 rounds up.
  EXPECT_EQ(float_to_bf16_bits(1.0f / 3), 0x3EAB);
  EXPECT_EQ(stored_value(1.0 / 3, DType::bf16), 0.333984375);
  EXPECT_EQ(stored_value(1.0 / 3, DType::f16), 0x1.554p-2);
  // Ties to even.
  EXPECT_EQ(stored_value(1 + 0x1p-11, DType::f16), 1.0);
  EXPECT_EQ(stored_value(1 + 3 * 0x1p-11, DType::f16), 1 + 0x1p-9);
  EXPECT_EQ(stored_value(1 + 0x1p-8, DType::bf16), 1.0);
  EXPECT_EQ(stored_value(1 + 3 * 0x1p-8, DType::bf16), 1 + 0x1p-6);
  // Overflow: past the largest finite value (by half an ulp or more) gives infinity.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(stored_value(65504, DType::f16), 65504);
  EXPECT_EQ(stored_value(65519, DType::f16), 65504);
  EXPECT_EQ(stored_value(65520, DType::f16), inf);
  EXPECT_EQ(stored_value(-1e6, DType::f16), -inf);
  EXPECT_EQ(stored_value(3.4e38, DType::bf16), inf);  // rounds above bf16's 0x7F7F
  EXPECT_EQ(stored_value(1e39, DType::f32), inf);
  // Subnormals: f16's step is 2^-24; half of it ties to zero, three quarters round up.
  EXPECT_EQ(stored_value(0x1p-24, DType::f16), 0x1p-24);
  EXPECT_EQ(stored_value(0x1p-25, DType::f16), 0.0);
  EXPECT_EQ(stored_value(0x1.8p-25, DType::f16), 0x1p-24);
  EXPECT_EQ(stored_value(5e-7, DType::f16), 8 * 0x1p-24);    // 8.39 steps
  EXPECT_EQ(stored_value(0x1p-130, DType::bf16), 0x1p-130);  // an f32 subnormal, exact in bf16
  // NaN stays NaN; f32 rounds to float.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(stored_value(nan, DType::f16)));
  EXPECT_TRUE(std::isnan(stored_value(nan, DType::bf16)));
  EXPECT_EQ(stored_value(0.1, DType::f32), static_cast<double>(0.1f));
  EXPECT_EQ(stored_value(16777217, DType::f32), 16777216.0);
}

constexpr const char* kModule = R"(module stores
sym 1 <= n <= 8

fn half(x: f16[n], y: bf16[n]) -> tuple(f16[n], bf16[n], f16[n]) {
  dataflow {
    a = add(x, x)
    b = mul(y, y)
    c = scale(a, factor=1/3)
    r = tuple(a, b, c)
  }
  return r
}
)";

VmValue tensor_arg(std::vector<double> values) {
  Shape shape{static_cast<int64_t>(values.size())};
  return VmValue{std::make_shared<Tensor<double>>(shape, std::move(values))};
}

// The arguments are rounded to the parameters' dtypes when bound, and each binding's result to its
// own: the values are those of rounding by hand at the same points.
TEST(ModelDtype, VmStoresArgumentsAndResultsInTheirDtypes) {
  SymProver prover;
  Module m = parse_module(kModule, "stores.wmod", prover, ".");
  Vm vm(m);
  std::vector<double> x = {0.1, 1.0 / 3, 1000.7, -2.2}, y = {0.1, 1.0 / 3, 3.3, -7.01};
  const VmValue x_arg = tensor_arg(x), y_arg = tensor_arg(y);
  VmValue r = vm.run("half", {x_arg, y_arg});
  // Results are rounded in place where nothing else holds them: never the caller's arguments.
  EXPECT_EQ(x_arg.tensor()->data, x);
  EXPECT_EQ(y_arg.tensor()->data, y);
  const VmTuple& out = *r.tuple();
  ASSERT_EQ(out.size(), 3u);
  bool rounded = false;
  for (size_t i = 0; i < x.size(); ++i) {
    double xh = stored_value(x[i], DType::f16), yb = stored_value(y[i], DType::bf16);
    double a = stored_value(xh + xh, DType::f16);
    EXPECT_EQ(out[0].tensor()->data[i], a) << i;
    EXPECT_EQ(out[1].tensor()->data[i], stored_value(yb * yb, DType::bf16)) << i;
    EXPECT_EQ(out[2].tensor()->data[i],
              stored_value(static_cast<float>(a) * static_cast<float>(1.0 / 3), DType::f16))
        << i;
    // Not trivially representable: the rounding changes the values computed in f32.
    rounded = rounded || static_cast<float>(y[i] * y[i]) != out[1].tensor()->data[i];
  }
  EXPECT_TRUE(rounded);
}

// An f32 argument seen before is not scanned again; a new tensor is, however its values come.
TEST(ModelDtype, ArgumentsAreRoundedOnEveryRunThatBringsNewOnes) {
  SymProver prover;
  Module m = parse_module(R"(module f32_args
sym 1 <= n <= 8

fn pass(x: f32[n]) -> f32[n] {
  dataflow {
    r = add(x, x)
  }
  return r
}
)",
                          "f32_args.wmod", prover, ".");
  Vm vm(m);
  const VmValue exact = tensor_arg({0.5, 0.25, -3.0});
  for (int run = 0; run < 2; ++run)
    EXPECT_EQ(vm.run("pass", {exact}).tensor()->data, (std::vector<double>{1.0, 0.5, -6.0}));
  for (int run = 0; run < 3; ++run) {
    const double v = 0.1 * (run + 1);  // not an f32 value
    const VmValue fresh = tensor_arg({v, v, v});
    const double twice = 2.0 * static_cast<double>(static_cast<float>(v));
    EXPECT_EQ(vm.run("pass", {fresh}).tensor()->data, (std::vector<double>{twice, twice, twice}))
        << "run " << run;
    EXPECT_EQ(fresh.tensor()->data[0], v) << "the caller's tensor was changed";
  }
}

TEST(ModelDtype, OutputsAreWrittenInTheClosestNumpyType) {
  EXPECT_EQ(npy_element(DType::f32), NpyElement::f4);
  EXPECT_EQ(npy_element(DType::f16), NpyElement::f2);
  EXPECT_EQ(npy_element(DType::bf16), NpyElement::f4);
  MType ret = MType::tuple({MType::tensor(DType::f16, {4}),
                            MType::tuple({MType::tensor(DType::bf16, {4}), MType::integer()})});
  std::map<std::string, NpyElement> elements = result_elements(ret);
  EXPECT_EQ(elements.size(), 2u);
  EXPECT_EQ(elements.at("result.0"), NpyElement::f2);
  EXPECT_EQ(elements.at("result.1.0"), NpyElement::f4);
  // An f16 array round-trips through <f2, rounding to nearest even on the way out.
  Tensor<double> t(Shape{3}, std::vector<double>{0.1, -65504, 0x1p-24});
  std::string npy = make_npy(t, NpyElement::f2);
  EXPECT_NE(npy.find("'descr': '<f2'"), std::string::npos);
  NpyArray back = parse_npy(npy, "x");
  EXPECT_EQ(back.tensor.data, (std::vector<double>{0x1.998p-4, -65504, 0x1p-24}));
}

// tests/model/dtypes.wmod (f16, bf16, casts, an f16 µGraph under both executors) against NumPy
// rounding at the same points.
TEST(ModelDtype, DtypeFixtureMatchesNumpyRoundingAtTheSamePoints) {
  test::run_numpy_reference("tests/model/dtypes_reference.py", "weft_model_dtypes", "");
}

// The tiny Llama with every tensor bf16 (and f16): prefill and decode steps against the NumPy
// reference, within the dtype's tolerance and visibly less precise than f32.
TEST(ModelDtype, TinyLlamaInBf16MatchesTheNumpyReference) {
  test::run_numpy_reference("examples/models/tiny_llama_reference.py", "weft_tiny_llama_bf16",
                            "--dtype bf16");
}

TEST(ModelDtype, TinyLlamaInF16MatchesTheNumpyReference) {
  test::run_numpy_reference("examples/models/tiny_llama_reference.py", "weft_tiny_llama_f16",
                            "--dtype f16");
}

}  // namespace
}  // namespace weft
