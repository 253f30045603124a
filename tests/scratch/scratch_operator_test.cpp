// An operator is one row: this binary fills the table's two reserved rows (ir/ops.def) before the
// table is built, an elementwise µGraph operator (softsign) and an elementwise model-only one
// (lerp), and pushes them through every layer that runs operators: the parsers, the reference
// interpreter, the finite-field verifier, the CPU backend, the CUDA code in host emulation, and
// the model's host VM and device executor. A layer that still switched over operator kinds would
// fail here. It is a binary of its own because no other test may see the filled rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "core/target.h"
#include "exec/device_vm.h"
#include "exec/vm.h"
#include "interp/compare.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "ir/ops.h"
#include "ir/parser.h"
#include "lower/pipeline.h"
#include "model/parser.h"
#include "runtime/program.h"
#include "tests/emulation_check.h"
#include "tests/test_util.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"

WEFT_TEST_TIERS("unit", "loads_generated");

namespace weft {
namespace {

double softsign(double x) {
  return x / (1.0 + std::abs(x));
}

// The two rows, as an engineer adding these operators would write them in ir/ops.cpp and
// ir/ops_model.cpp: softsign uninterpreted by the verifier (no Lax formula), lerp with a rational
// attribute that its scalar forms read as the constant {2}.
bool fill_rows() {
  fill_scratch_row({.kind = OpKind::scratch_unary,
                    .name = "softsign",
                    .min_inputs = 1,
                    .max_inputs = 1,
                    .levels = kAtKernel | kAtBlock | kAtThread | kAtModel,
                    .real = [](const ScalarArgs& s) { return softsign(s.x); },
                    .fusion = FusionPattern::elementwise,
                    .code = {"({0} / (1.0f + std::fabs({0})))", "({0} / (1.0f + fabsf({0})))"},
                    .cost = CostClass::per_result_element,
                    .slots = {.fp32 = 3, .sfu = 1},
                    .doc = "x / (1 + |x|)"});
  fill_scratch_row({.kind = OpKind::scratch_model,
                    .name = "lerp",
                    .min_inputs = 2,
                    .max_inputs = 2,
                    .levels = kAtModel,
                    .attrs = {{"weight", AttrKind::rational, false, *Rational::make(1, 2)}},
                    .real = [](const ScalarArgs& s) { return s.x + s.k * (s.y - s.x); },
                    .symbolic = Symbolic::none,
                    .code = {.cuda = "({0} + {2} * ({1} - {0}))"},
                    .cost = CostClass::per_operand_element,
                    .doc = "a + weight (b - a), the operands broadcast"});
  return true;
}
// Before main, so before anything reads the table.
const bool kRowsFilled = fill_rows();

// examples/gated_mlp's test-size programs (tests/golden/lower) with softsign in place of silu:
// the input program and its fused form (softsign in a thread graph).
Graph gated_mlp_with_softsign(const char* file) {
  std::string text = test::read_text(test::source_path(std::string("tests/golden/lower/") + file));
  EXPECT_NE(text.find("silu("), std::string::npos) << file;
  for (size_t at = text.find("silu("); at != std::string::npos; at = text.find("silu(", at))
    text.replace(at, 4, "softsign");
  return parse_graph(text, file);
}

TEST(ScratchOperator, TheRowsAreInTheTableByName) {
  ASSERT_TRUE(kRowsFilled);
  EXPECT_EQ(op_by_name("softsign"), OpKind::scratch_unary);
  EXPECT_EQ(op_by_name("lerp"), OpKind::scratch_model);
  EXPECT_EQ(op_info(OpKind::scratch_unary).op_class, OpClass::unary);
  EXPECT_EQ(op_info(OpKind::scratch_model).device, DeviceKernel::elementwise);
}

TEST(ScratchOperator, TheInterpreterComputesItsRealForm) {
  Graph g = parse_graph("input X: f32[4, 8]\nY = softsign(X)\noutput Y\n", "<softsign>");
  auto inputs = random_inputs(g, 3);
  auto out = evaluate_real(g, inputs, /*f32=*/false);
  ASSERT_EQ(out.size(), 1u);
  for (size_t i = 0; i < out[0].data.size(); ++i)
    EXPECT_DOUBLE_EQ(out[0].data[i], softsign(inputs[0].data[i]));
}

// Without a formula the verifier models softsign as an uninterpreted function of its operand:
// the fused program is equivalent to its input program, and softsign(2x) is not 2 softsign(x).
TEST(ScratchOperator, TheVerifierTreatsItAsAnUninterpretedFunction) {
  Graph plain = gated_mlp_with_softsign("gated_mlp.weft");
  Graph fused = gated_mlp_with_softsign("gated_mlp.fused.weft");
  EXPECT_EQ(verify_equivalent(plain, fused).verdict, Verdict::equivalent);
  Graph a =
      parse_graph("input X: f32[2, 3]\nS = scale(X, factor=2)\nY = softsign(S)\noutput Y\n", "<a>");
  Graph b =
      parse_graph("input X: f32[2, 3]\nS = softsign(X)\nY = scale(S, factor=2)\noutput Y\n", "<b>");
  VerifyOptions no_float;
  no_float.float_check = false;
  EXPECT_EQ(verify_equivalent(a, b, no_float).verdict, Verdict::not_equivalent);
}

TEST(ScratchOperator, TheCpuBackendRunsItsCppForm) {
  for (const char* file : {"gated_mlp.weft", "gated_mlp.fused.weft"})
    test::expect_cpu_backend_matches_interpreter(gated_mlp_with_softsign(file), 11);
}

TEST(ScratchOperator, TheCudaCodeRunsItsCudaFormInHostEmulation) {
  for (const char* file : {"gated_mlp.weft", "gated_mlp.fused.weft"}) {
    Graph g = gated_mlp_with_softsign(file);
    ProgramPlan plan = lower_graph(g, target_by_name("h100"));
    auto prog = load_program(plan, Backend::cuda_emulation);
    EXPECT_NE(prog->source().find("fabsf("), std::string::npos) << file;
    auto cmp = test::compare_emulation(g, plan, *prog, 7);
    ASSERT_FALSE(cmp.empty()) << file;
    for (const Comparison& c : cmp)
      EXPECT_TRUE(c.ok) << file << ": scaled error " << c.scaled_error;
  }
}

// In a model function: softsign as a one-operator µGraph row, lerp as a model-only row; the host
// VM runs their real forms, the device executor their CUDA forms in its elementwise kernel.
TEST(ScratchOperator, TheModelVmAndTheDeviceExecutorRunBothRows) {
  SymProver prover;
  Module m = parse_module(R"(module scratch
fn main(x: f32[6, 8], w: f32[1, 8]) -> f32[6, 8] {
  dataflow {
    s = softsign(x)
    l = lerp(s, w, weight=0.25)
  }
  return l
}
)",
                          "scratch.wmod", prover);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-3, 3);
  Tensor<double> x({6, 8}, 0.0), w({1, 8}, 0.0);
  for (double& v : x.data) v = u(rng);
  for (double& v : w.data) v = u(rng);
  std::vector<VmValue> args = {VmValue{std::make_shared<Tensor<double>>(x)},
                               VmValue{std::make_shared<Tensor<double>>(w)}};
  VmValue want = Vm(m).run("main", args);
  DeviceVm device(m, Backend::cuda_emulation);
  VmValue got = device.run_host("main", args);
  const Tensor<double>&h = *want.tensor(), &d = *got.tensor();
  ASSERT_EQ(h.shape, (Shape{6, 8}));
  ASSERT_EQ(d.shape, h.shape);
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 8; ++c) {
      const size_t i = static_cast<size_t>(r * 8 + c);
      const double s = softsign(x.data[i]);
      const double expected = s + 0.25 * (w.data[static_cast<size_t>(c)] - s);
      // Both store f32 tensors: rounded at each operator.
      EXPECT_NEAR(h.data[i], expected, 1e-6);
      EXPECT_NEAR(d.data[i], expected, 1e-5);
    }
  EXPECT_EQ(device.stats().host_fallbacks, 0);
  EXPECT_EQ(device.stats().kernel_launches, 2);
}

}  // namespace
}  // namespace weft
