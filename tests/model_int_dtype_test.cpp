// Integer, bool and f64 tensors in the model layer: their storage (truncation, wrapping, 2^53),
// the operators' result dtypes, the VM computing them exactly, .npz I/O in their NumPy types,
// the device executor keeping them exact, and kernel programs refusing them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/dtype_convert.h"
#include "exec/device_vm.h"
#include "exec/npz.h"
#include "exec/run_io.h"
#include "exec/vm.h"
#include "ir/parser.h"
#include "model/parser.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");

namespace weft {
namespace {

// Expects `f` to throw a UserError whose message holds `needle`.
template <typename F>
void expect_user_error(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    return;
  }
  ADD_FAILURE() << "no UserError; expected one saying: " << needle;
}

TEST(ModelIntDtype, NamesRoundTripAndSizesAreTheTypes) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32,
                  DType::i16, DType::i8, DType::u8, DType::boolean})
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
  EXPECT_EQ(dtype_name(DType::boolean), "bool");
  EXPECT_EQ(dtype_bytes(DType::i64), 8);
  EXPECT_EQ(dtype_bytes(DType::i32), 4);
  EXPECT_EQ(dtype_bytes(DType::boolean), 1);
  EXPECT_TRUE(is_kernel_dtype(DType::bf16));
  EXPECT_FALSE(is_kernel_dtype(DType::f64));
  EXPECT_TRUE(is_float_dtype(DType::f64));
  EXPECT_TRUE(is_integer_dtype(DType::u8));
  EXPECT_FALSE(is_integer_dtype(DType::boolean));
}

TEST(ModelIntDtype, IntegersTruncateAndWrapAsTheirWidthAndBoolIsNonzero) {
  EXPECT_EQ(stored_value(-7.5, DType::i64), -7.0);
  EXPECT_EQ(stored_value(7.9, DType::i32), 7.0);
  EXPECT_EQ(stored_value(2147483648.0, DType::i32), -2147483648.0);
  EXPECT_EQ(stored_value(300, DType::u8), 44.0);
  EXPECT_EQ(stored_value(-1, DType::u8), 255.0);
  EXPECT_EQ(stored_value(128, DType::i8), -128.0);
  EXPECT_EQ(stored_value(40000, DType::i16), -25536.0);
  EXPECT_EQ(stored_value(std::nan(""), DType::i64), 0.0);
  EXPECT_EQ(stored_value(0.25, DType::boolean), 1.0);
  EXPECT_EQ(stored_value(std::nan(""), DType::boolean), 1.0);
  EXPECT_EQ(stored_value(0.0, DType::boolean), 0.0);
  // 2^53 + 1 is not a double, but 2^53 - 1 and 2^62 are kept as they are.
  EXPECT_EQ(stored_value(9007199254740991.0, DType::i64), 9007199254740991.0);
  EXPECT_EQ(stored_value(0x1p62, DType::i64), 0x1p62);
  EXPECT_EQ(stored_value(0.1, DType::f64), 0.1);
}

TEST(ModelIntDtype, EveryDtypesBytesRoundTrip) {
  const std::vector<double> ints = {0, 1, -1, 100, -128, 127};
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i64, DType::i32,
                  DType::i16, DType::i8}) {
    std::vector<uint8_t> bytes = encode_values(ints.data(), ints.size(), t);
    EXPECT_EQ(bytes.size(), ints.size() * static_cast<size_t>(dtype_bytes(t)));
    std::vector<double> back(ints.size());
    decode_values(bytes.data(), ints.size(), t, back.data());
    EXPECT_EQ(back, ints) << dtype_name(t);
  }
  const std::vector<double> big = {9007199254740991.0, -9007199254740991.0, 0x1p62};
  std::vector<uint8_t> bytes = encode_values(big.data(), big.size(), DType::i64);
  std::vector<double> back(big.size());
  decode_values(bytes.data(), big.size(), DType::i64, back.data());
  EXPECT_EQ(back, big);
  const std::vector<double> flags = {0, 1, 1, 0};
  bytes = encode_values(flags.data(), flags.size(), DType::boolean);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0, 1, 1, 0}));
}

constexpr const char* kModule = R"(module ints
sym 1 <= n <= 8

fn index_math(ids: i64[n], d: i64[n], x: f32[n]) -> tuple(i64[n], i64[n], bool[n], f32[n], i32[n]) {
  dataflow {
    big = add(ids, ids)
    q = div(ids, d)
    m = less(ids, d)
    picked = where(m, x, x)
    c = cast(big, to=6)
    r = tuple(big, q, m, picked, c)
  }
  return r
}

fn wide(x: f64[n]) -> f64[n] {
  dataflow {
    y = mul(x, x)
  }
  return y
}
)";

VmValue tensor_arg(std::vector<double> values) {
  Shape shape{static_cast<int64_t>(values.size())};
  return VmValue{std::make_shared<Tensor<double>>(shape, std::move(values))};
}

TEST(ModelIntDtype, OperatorsGiveTheirDtypesAndTheVmComputesIntegersExactly) {
  SymProver prover;
  Module m = parse_module(kModule, "ints.wmod", prover, ".");
  const Function& f = *m.find_function("index_math");
  ASSERT_EQ(f.ret.fields.size(), 5u);
  EXPECT_EQ(f.ret.fields[0].dtype, DType::i64);
  EXPECT_EQ(f.ret.fields[2].dtype, DType::boolean);
  EXPECT_EQ(f.ret.fields[4].dtype, DType::i32);
  Vm vm(m);
  // 2^40 + 1 is not an f32 value: an f32 path would round the sums.
  const double big = 1099511627777.0;
  VmValue r = vm.run("index_math", {tensor_arg({big, -7, 7, 3}), tensor_arg({1, 2, 2, 5}),
                                    tensor_arg({0.5, 1.5, 2.5, 3.5})});
  const VmTuple& out = *r.tuple();
  EXPECT_EQ(out[0].tensor()->data, (std::vector<double>{2 * big, -14, 14, 6}));
  // Integer division truncates toward zero (ONNX's Div, C's /).
  EXPECT_EQ(out[1].tensor()->data, (std::vector<double>{big, -3, 3, 0}));
  EXPECT_EQ(out[2].tensor()->data, (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(out[3].tensor()->data, (std::vector<double>{0.5, 1.5, 2.5, 3.5}));
  // i32 wraps 2^41 + 2 to 2.
  EXPECT_EQ(out[4].tensor()->data, (std::vector<double>{2, -14, 14, 6}));
  // f64 is computed and kept in f64: 0.1^2 is not an f32 product.
  VmValue w = vm.run("wide", {tensor_arg({0.1, 3})});
  EXPECT_EQ(w.tensor()->data, (std::vector<double>{0.1 * 0.1, 9}));
}

TEST(ModelIntDtype, IntegerArgumentsMustBeExact) {
  SymProver prover;
  Module m = parse_module(kModule, "ints.wmod", prover, ".");
  Vm vm(m);
  const VmValue d = tensor_arg({1}), x = tensor_arg({1});
  expect_user_error(
      [&] {
        vm.run("index_math", {tensor_arg({1.5}), d, x});
      },
      "parameter 'ids' is i64, but its element 0 is 1.5");
  expect_user_error([&] { vm.run("index_math", {tensor_arg({0x1p60}), d, x}); }, "beyond 2^53");
}

TEST(ModelIntDtype, ComparisonsOfTwoDtypesAreRefused) {
  SymProver prover;
  expect_user_error(
      [&] {
        parse_module(R"(module mixed
sym 1 <= n <= 8

fn f(a: i64[n], b: f32[n]) -> bool[n] {
  dataflow {
    m = equal(a, b)
  }
  return m
}
)",
                     "mixed.wmod", prover, ".");
      },
      "must have the same dtype");
}

TEST(ModelIntDtype, NpzKeepsIntegerAndBoolArraysInTheirTypes) {
  Tensor<double> ids(Shape{3}, std::vector<double>{9007199254740991.0, -5, 0});
  Tensor<double> mask(Shape{2}, std::vector<double>{1, 0});
  std::string path = testing::TempDir() + "/ints.npz";
  write_npz(path, {{"ids", ids}, {"mask", mask}},
            {{"ids", npy_element(DType::i64)}, {"mask", npy_element(DType::boolean)}});
  NpzArrays back = read_npz(path);
  EXPECT_EQ(back.at("ids").tensor.data, ids.data);
  EXPECT_TRUE(back.at("ids").integral);
  EXPECT_EQ(back.at("mask").tensor.data, mask.data);
  EXPECT_NE(make_npy(mask, NpyElement::b1).find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(make_npy(ids, NpyElement::i8).find("'descr': '<i8'"), std::string::npos);
  EXPECT_EQ(result_elements(MType::tensor(DType::i32, {3})).at("result"), NpyElement::i4);
}

TEST(ModelIntDtype, KernelProgramsRefuseModelOnlyDtypes) {
  expect_user_error(
      [] { parse_graph("program p\ninput x: i64[4]\ny = exp(x)\noutput y\n", "p.weft"); },
      "a kernel program's tensors are f32, f16 or bf16, not i64");
}

constexpr const char* kMovement = R"(module moves
sym 1 <= n <= 8

fn moves(ids: i64[n, 2], x: f32[4, 3]) -> tuple(i64[2, n], f32[n, 2, 3], bool[n, 2], i64[n, 1], i64[3]) {
  dataflow {
    t = permute(ids, perm=[1, 0])
    small = shift(ids, offset=-1099511627776)
    g = gather(x, small, axis=0)
    e = equal(ids, ids)
    total = sum(ids, dim=1, to=1)
    ra = range(start=1099511627776, limit=1099511627779, delta=1)
    r = tuple(t, g, e, total, ra)
  }
  return r
}
)";

// The device executor (host emulation) moves, sums and generates i64 values exactly (2^40 + k is
// no f32 value) and gathers by i64 indices, as the host VM does.
TEST(ModelIntDtype, DeviceExecutorMovesAndIndexesWithIntegersExactly) {
  SymProver prover;
  Module m = parse_module(kMovement, "moves.wmod", prover, ".");
  std::vector<double> ids = {1099511627776.0, 1099511627779.0, 1099511627778.0, 1099511627777.0};
  std::vector<double> xs(12);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.5 + static_cast<double>(i);
  std::vector<VmValue> args = {VmValue{std::make_shared<Tensor<double>>(Shape{2, 2}, ids)},
                               VmValue{std::make_shared<Tensor<double>>(Shape{4, 3}, xs)}};
  Vm vm(m);
  VmValue host = vm.run("moves", args);
  DeviceVm device(m, Backend::cuda_emulation);
  VmValue dev = device.run_host("moves", args);
  const VmTuple& h = *host.tuple();
  const VmTuple& d = *dev.tuple();
  EXPECT_EQ(h[0].tensor()->data, (std::vector<double>{ids[0], ids[2], ids[1], ids[3]}));
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(d[i].tensor()->data, h[i].tensor()->data) << i;
  EXPECT_EQ(h[3].tensor()->data, (std::vector<double>{ids[0] + ids[1], ids[2] + ids[3]}));
  EXPECT_EQ(h[4].tensor()->data,
            (std::vector<double>{1099511627776.0, 1099511627777.0, 1099511627778.0}));
  EXPECT_EQ(h[1].tensor()->data[3], 9.5);  // small[0][1] = 3: row 3 of x
  EXPECT_EQ(h[2].tensor()->data, (std::vector<double>{1, 1, 1, 1}));
}

}  // namespace
}  // namespace weft
