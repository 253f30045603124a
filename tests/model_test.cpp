// The model layer: .wmod round trips and goldens, the bad-input corpus, symbolic deduction against
// the operator table's InferFn, run-time match_cast failures, the VM's frees, and .npz files.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "exec/npz.h"
#include "exec/vm.h"
#include "model/deduce.h"
#include "model/expand.h"
#include "model/parser.h"
#include "model/printer.h"
#include "tests/golden.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

namespace fs = std::filesystem;

TEST(ModelFormat, EveryFixtureRoundTripsAndMatchesItsGolden) {
  auto files = test::model_fixtures();
  ASSERT_GE(files.size(), 4u);
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    SymProver prover;
    Module m = load_module(f.string(), prover);
    std::string text = print_module(m);
    Module again = parse_module(text, "printed", prover, f.parent_path().string());
    EXPECT_TRUE(again == m) << text;
    EXPECT_EQ(print_module(again), text);
    check_module(m, prover);
    EXPECT_TRUE(
        test::matches_golden(text, "tests/golden/model/" + f.stem().string() + ".wmod.txt"));
  }
}

TEST(ModelFormat, BadCorpusExitsOneWithTheExpectedLocatedMessage) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(test::source_path("tests/bad_model")))
    files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 20u);
  for (const fs::path& f : files) {
    SCOPED_TRACE(f.string());
    std::ifstream in(f, std::ios::binary);
    std::string first;
    std::getline(in, first);
    const std::string tag = "# expect: ";
    ASSERT_EQ(first.rfind(tag, 0), 0u) << "first line must be '# expect: LINE:COL: message'";
    std::string want = first.substr(tag.size());
    size_t c1 = want.find(':'), c2 = want.find(':', c1 + 1);
    std::string where = want.substr(0, c2), message = want.substr(c2 + 2);
    auto [code, out] = test::run_weft("model check '" + f.string() + "'");
    EXPECT_EQ(code, 1) << out;
    EXPECT_NE(out.find(f.string() + ":" + where + ": error: " + message), std::string::npos) << out;
  }
}

// The symbolic rules of model/deduce agree with the table's InferFn at random bindings.
TEST(ModelDeduce, SymbolicRulesAgreeWithTheTableAtRandomBindings) {
  SymScope scope;
  SymVar n = scope.declare("n", 1, 64), m = scope.declare("m", 1, 64);
  struct Case {
    OpKind op;
    std::vector<std::vector<SymExpr>> shapes;
    MAttrs attrs;
  };
  std::vector<Case> cases = {
      {OpKind::add, {{n, 1, 4}, {n, m, 4}}, {}},
      {OpKind::matmul, {{1, n, 2 * m}, {3, 2 * m, 5}}, {}},
      {OpKind::sum, {{n, 4 * m}}, {{"dim", SymExpr(1)}, {"to", SymExpr(4)}}},
      {OpKind::reshape, {{n, 6}}, {{"shape", std::vector<SymExpr>{n, 2, 3}}}},
      {OpKind::concat, {{n, 3}, {m, 3}, {n + m, 3}}, {{"dim", SymExpr(0)}}},
      {OpKind::split, {{2 * n, m}}, {{"dim", SymExpr(0)}, {"parts", SymExpr(2)}}},
      {OpKind::repeat, {{n, m}}, {{"dim", SymExpr(-1)}, {"times", SymExpr(3)}}},
      {OpKind::rms_norm, {{n, m}}, {}},
      {OpKind::softmax, {{n, m}}, {{"dim", SymExpr(0)}}},
      {OpKind::silu, {{n, m}}, {}},
  };
  std::mt19937_64 rng(7);
  for (const Case& c : cases) {
    SCOPED_TRACE(op_info(c.op).name);
    SymProver prover;
    std::vector<SymCondition> checks;
    DeduceContext ctx(prover, {}, &checks);
    std::vector<MType> in;
    for (const auto& s : c.shapes) in.push_back(MType::tensor(DType::f32, s));
    MAttrs attrs = c.attrs;
    MType out = deduce_table_op(ctx, c.op, in, attrs);
    for (int trial = 0; trial < 20; ++trial) {
      SymBinding b{{"n", static_cast<int64_t>(rng() % 64 + 1)},
                   {"m", static_cast<int64_t>(rng() % 64 + 1)}};
      std::vector<TensorType> concrete;
      for (const auto& s : c.shapes) {
        Shape shape;
        for (const SymExpr& d : s) shape.push_back(evaluate(d, b));
        concrete.push_back({DType::f32, shape});
      }
      Attrs ta = evaluate_attrs(attrs, b, SourceLoc{});
      bool checks_hold = true;
      for (const SymCondition& cond : checks) checks_hold = checks_hold && cond.holds(b);
      if (!checks_hold) continue;  // the run-time check would refuse this binding
      auto want = op_info(c.op).infer(concrete, ta, InferContext{});
      std::vector<MType> got = out.kind == MTypeKind::tuple ? out.fields : std::vector<MType>{out};
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        Shape g;
        for (const SymExpr& d : *got[i].dims) g.push_back(evaluate(d, b));
        EXPECT_EQ(g, want[i].shape) << binding_str(b);
      }
    }
  }
}

// An equality with a counterexample within the bounds is an error at the call, not a check.
TEST(ModelDeduce, RefutedEqualitiesAreErrors) {
  SymScope scope;
  SymVar n = scope.declare("n", 1, 64);
  SymProver prover;
  std::vector<SymCondition> checks;
  DeduceContext ctx(prover, {}, &checks);
  MAttrs attrs;
  // 2 * floordiv(n, 2) == n fails for odd n.
  EXPECT_THROW(deduce_table_op(ctx, OpKind::add,
                               {MType::tensor(DType::f32, {2 * floordiv(n, SymExpr(2))}),
                                MType::tensor(DType::f32, {n})},
                               attrs),
               UserError);
}

// attention is a composite: expanded, it is primitive bindings that pass the check and
// round-trip; names of the intermediates never clash with the function's.
TEST(ModelExpand, AttentionExpandsToPrimitivesThatPassTheCheck) {
  const char* text = R"(sym n <= 64, t <= 64
fn main(q: f32[2, n, 8], k: f32[2, t, 8], v: f32[1, t, 4]) -> f32[2, n, 4] {
  dataflow {
    a.kt = exp(q)
    a = attention(a.kt, k, v, scale=1/8)
    o = attention(q, k, v, scale=1/8, causal=1, offset=t - n)
  }
  return o
}
)";
  SymProver prover;
  Module m = parse_module(text, "att.wmod", prover);
  Module x = expand_composites(m, prover);
  check_module(x, prover);
  std::string printed = print_module(x, false);
  EXPECT_EQ(printed.find("attention("), std::string::npos) << printed;
  for (const char* want :
       {"a.kt2 = permute(k, perm=[0, 2, 1])", "a.scores = matmul(a.kt, a.kt2)",
        "a.scaled = scale(a.scores, factor=1/8)", "a.probs = softmax_safe(a.scaled, dim=-1)",
        "a = matmul(a.probs, v)", "o.masked = causal_mask(o.scaled, offset=t - n)",
        "o.probs = softmax_safe(o.masked, dim=-1)"})
    EXPECT_NE(printed.find(want), std::string::npos) << want << "\n" << printed;
  EXPECT_EQ(printed.find("a.masked"), std::string::npos) << "causal=0 has no mask";
  EXPECT_TRUE(parse_module(printed, "expanded", prover) == x);
  // The VM compiles the expansion (tests/model/new_ops_reference.py checks its numbers).
  Vm vm(m);
  EXPECT_NE(vm.disassemble("main").find("o.probs"), std::string::npos);
}

// tests/model/branch.wmod: each arm (and the nested if's) runs when its condition holds, against
// the same arithmetic done here, with the plan's storage poisoned.
TEST(ModelIf, TheVmTakesTheArmTheConditionSelects) {
  SymProver prover;
  Module m = load_module(test::source_path("tests/model/branch.wmod"), prover);
  VmOptions options;
  options.poison = true;
  Vm vm(m, options);
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  for (int64_t n : {1, 2, 5})
    for (int64_t p : {0, 3}) {
      SCOPED_TRACE(fmt::format("n={} p={}", n, p));
      Tensor<double> x({n, 16}, 0.0), w({1, 16}, 0.0);
      for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = std::sin(0.3 * static_cast<double>(i));
      for (size_t i = 0; i < w.data.size(); ++i) w.data[i] = std::cos(0.7 * static_cast<double>(i));
      VmValue out = vm.run("main", {VmValue{p}, VmValue{std::make_shared<Tensor<double>>(x)},
                                    VmValue{std::make_shared<Tensor<double>>(w)}});
      ASSERT_NE(out.tensor(), nullptr);
      for (size_t i = 0; i < x.data.size(); ++i) {
        double h = std::exp(x.data[i]);
        double y = p == 0 ? silu(h) : (n > 2 ? h * x.data[i] : x.data[i]) + w.data[i % 16];
        EXPECT_NEAR(out.tensor()->data[i], y * h, 1e-5 * std::max(1.0, std::abs(y * h))) << i;
      }
    }
  std::string vm_text = vm.disassemble("main");
  EXPECT_NE(vm_text.find("branch unless p == 0"), std::string::npos) << vm_text;
  EXPECT_NE(vm_text.find("jump to"), std::string::npos) << vm_text;
}

// Arms yielding tensors of different dims give a rank-only result; the condition must be
// evaluable when the if runs.
TEST(ModelIf, ArmsOfDifferentDimsJoinToTheirRank) {
  const char* text = R"(sym n <= 8
fn main(x: f32[n, 4]) -> f32[ndim=2] {
  y = if n <= 4 {
    c = concat(x, x, dim=0)
    yield c
  } else {
    yield x
  }
  return y
}
)";
  SymProver prover;
  Module m = parse_module(text, "join.wmod", prover);
  EXPECT_EQ(m.functions[0].blocks[0].bindings[0].type.str(), "f32[ndim=2]");
  EXPECT_TRUE(parse_module(print_module(m), "again", prover) == m);
  Vm vm(m);
  for (int64_t n : {3, 6}) {
    VmValue out =
        vm.run("main", {VmValue{std::make_shared<Tensor<double>>(Tensor<double>({n, 4}, 1.5))}});
    EXPECT_EQ(out.tensor()->shape, (Shape{n <= 4 ? 2 * n : n, 4}));
  }
}

const char* kCastModule = R"(sym n, m
fn main(x: f32[n, 4], y: f32[ndim=2]) -> f32[n, 4] {
  z = match_cast(y, f32[n, 4])
  dataflow {
    s = add(x, z)
  }
  return s
}
)";

VmValue tensor_arg(Shape shape, double seed) {
  Tensor<double> t(shape, 0.0);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = seed + 0.25 * static_cast<double>(i);
  return VmValue{std::make_shared<Tensor<double>>(std::move(t))};
}

TEST(ModelVm, MatchCastMismatchNamesTheVariableAndBothValues) {
  SymProver prover;
  Module m = parse_module(kCastModule, "cast.wmod", prover);
  Vm vm(m);
  VmValue ok = vm.run("main", {tensor_arg({3, 4}, 1), tensor_arg({3, 4}, 2)});
  ASSERT_NE(ok.tensor(), nullptr);
  EXPECT_EQ(ok.tensor()->data[5], (1 + 1.25) + (2 + 1.25));
  try {
    vm.run("main", {tensor_arg({3, 4}, 1), tensor_arg({5, 4}, 2)});
    FAIL() << "a mismatching match_cast ran";
  } catch (const UserError& e) {
    std::string s = e.what();
    EXPECT_NE(s.find("cast.wmod:3:7"), std::string::npos) << s;
    EXPECT_NE(s.find("match_cast of 'y'"), std::string::npos) << s;
    EXPECT_NE(s.find("n = 3"), std::string::npos) << s;
    EXPECT_NE(s.find("has 5"), std::string::npos) << s;
  }
}

TEST(ModelVm, FreesAfterLastUseKeepThePeakBelowTheTotal) {
  SymProver prover;
  Module m = load_module(test::source_path("tests/model/tiny_mlp.wmod"), prover);
  Vm vm(m);
  std::vector<VmValue> args = {tensor_arg({2, 3, 32}, 0.1), tensor_arg({1, 1, 32}, 1),
                               tensor_arg({1, 32, 48}, -0.2), tensor_arg({1, 32, 48}, 0.3),
                               tensor_arg({1, 48, 32}, -0.1)};
  for (auto& a : args) {
    auto t = std::make_shared<Tensor<double>>(*a.tensor());
    for (double& v : t->data) v = std::sin(v);  // varied, bounded inputs
    a = VmValue{std::shared_ptr<const Tensor<double>>(t)};
  }
  VmValue out = vm.run("main", args);
  ASSERT_EQ(out.tensor()->shape, (Shape{2, 3, 32}));
  EXPECT_GT(vm.stats().frees, 0);
  EXPECT_LT(vm.stats().peak_live_bytes, vm.stats().total_alloc_bytes);
  // Determinism: the same inputs give the same bits.
  Vm vm2(m);
  EXPECT_EQ(vm2.run("main", args).tensor()->data, out.tensor()->data);
}

TEST(ModelNpz, WrittenArchivesReadBack) {
  Tensor<double> a({2, 3}, std::vector<double>{1, -2, 3.5, 0, 1e-3, 7});
  Tensor<double> s(Shape{}, 4.0);
  std::string path = testing::TempDir() + "/weft_model_npz_test.npz";
  write_npz(path, {{"a", a}, {"s", s}});
  NpzArrays back = read_npz(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back.at("a").tensor.shape, a.shape);
  for (size_t i = 0; i < a.data.size(); ++i)
    EXPECT_EQ(back.at("a").tensor.data[i], static_cast<double>(static_cast<float>(a.data[i])));
  EXPECT_TRUE(back.at("s").tensor.shape.empty());
  EXPECT_EQ(back.at("s").tensor.data[0], 4.0);
}

TEST(ModelNpz, MalformedFilesAreUserErrors) {
  std::string path = testing::TempDir() + "/weft_model_bad.npz";
  for (std::string bytes : {std::string("PK"), std::string(100, 'x'),
                            std::string("PK\x05\x06") + std::string(18, '\xff')}) {
    std::ofstream(path, std::ios::binary) << bytes;
    EXPECT_THROW(read_npz(path), UserError);
  }
  EXPECT_THROW(parse_npy("\x93NUMPY\x01\x00\x10\x00{'descr': '<c8'", "x"), UserError);
}

TEST(ModelExample, NumpyArchivesFromNumpyReadBack) {
  std::string py = test::python_with_numpy();
  ASSERT_FALSE(py.empty()) << "no python3 with numpy: run scripts/install-deps.sh";
  std::string path = testing::TempDir() + "/weft_model_np.npz";
  std::string cmd = py + " -c \"import numpy as np; np.savez_compressed('" + path +
                    "', a=np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, i=np.int64(7), "
                    "h=np.ones((4,), np.float16) / 3)\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  NpzArrays arrays = read_npz(path);
  EXPECT_EQ(arrays.at("a").tensor.shape, (Shape{2, 3}));
  EXPECT_EQ(arrays.at("a").tensor.data[5], 2.5);
  EXPECT_TRUE(arrays.at("i").integral);
  EXPECT_EQ(arrays.at("i").tensor.data[0], 7.0);
  EXPECT_NEAR(arrays.at("h").tensor.data[3], 1.0 / 3, 1e-3);
}

// The tiny Llama: prefill and decode steps at three bindings of (b, n) with the cache fed back,
// against the independent NumPy implementation.
void run_tiny_llama_reference(const std::string& flags) {
  test::run_numpy_reference("examples/models/tiny_llama_reference.py",
                            flags.empty() ? "weft_tiny_llama" : "weft_tiny_llama_poison", flags);
}

// slice, where, layer_norm and gelu_tanh at three bindings against NumPy (poisoned storage), and
// a parameter of the wrong shape failing cleanly.
TEST(ModelOps, SliceWhereLayerNormGeluTanhMatchNumpy) {
  test::run_numpy_reference("tests/model/new_ops_reference.py", "weft_model_new_ops", "");
}

// ONNX's operators (model/model_ops_onnx.cpp) at three bindings of each of two fixtures against
// NumPy implementations written from the ONNX specification.
TEST(ModelOps, OnnxOperatorsMatchNumpy) {
  test::run_numpy_reference("tests/model/onnx_ops_reference.py", "weft_model_onnx_ops", "");
}

TEST(ModelExample, TinyLlamaMatchesTheNumpyReference) {
  run_tiny_llama_reference("");
}

// The same with planned storage filled with NaN when allocated and when each tensor dies: a plan
// that reused bytes still needed would put NaN into the logits.
TEST(ModelExample, TinyLlamaWithPoisonedStorageMatchesTheNumpyReference) {
  run_tiny_llama_reference("--poison");
}

}  // namespace
}  // namespace weft
