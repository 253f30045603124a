// Memory planning: planned <= naive on every fixture, no two live tensors share bytes, the plan's
// golden text, the VM running with the plan (bit-equal to running without, with NaN poisoning
// too), and a deliberately wrong plan caught by the poisoning.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "core/error.h"
#include "exec/vm.h"
#include "model/deduce.h"
#include "model/parser.h"
#include "model/plan.h"
#include "sym/interval.h"
#include "tests/golden.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

namespace fs = std::filesystem;

// A random binding of the module's variables within their bounds (unbounded: up to 300).
SymBinding random_binding(const Module& m, std::mt19937_64& rng) {
  SymBinding b;
  for (const auto& [name, var] : m.syms.vars()) {
    int64_t hi = std::min<int64_t>(var.hi().value_or(300), var.lo() + 300);
    b[name] = var.lo() + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - var.lo() + 1));
  }
  return b;
}

// Two planned tensors live at the same binding never share storage bytes.
void expect_no_live_overlap(const FunctionPlan& f, const SymBinding& at) {
  for (size_t i = 0; i < f.allocs.size(); ++i)
    for (size_t j = i + 1; j < f.allocs.size(); ++j) {
      const PlannedAlloc &a = f.allocs[i], &b = f.allocs[j];
      if (a.placement != AllocPlacement::storage || b.placement != AllocPlacement::storage)
        continue;
      bool live_together = a.binding <= b.last_use && b.binding <= a.last_use;
      if (!live_together) continue;
      const PlannedStorage &sa = f.storages[static_cast<size_t>(a.storage)],
                           &sb = f.storages[static_cast<size_t>(b.storage)];
      if (!f.is_static) {
        EXPECT_NE(a.storage, b.storage) << f.function << ": " << a.var << " and " << b.var;
        continue;
      }
      int64_t a0 = sa.offset, a1 = sa.offset + evaluate(a.bytes, at);
      int64_t b0 = sb.offset, b1 = sb.offset + evaluate(b.bytes, at);
      EXPECT_TRUE(a1 <= b0 || b1 <= a0) << f.function << ": " << a.var << " and " << b.var;
    }
}

TEST(ModelPlan, PlannedIsAtMostNaiveAndLiveTensorsNeverShareBytesOnEveryFixture) {
  auto files = test::model_fixtures();
  ASSERT_GE(files.size(), 5u);
  std::mt19937_64 rng(11);
  int reused = 0, static_plans = 0, symbolic_plans = 0;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    SymProver prover;
    Module m = load_module(file.string(), prover);
    ModulePlan plan = plan_memory(m, prover);
    ASSERT_EQ(plan.functions.size(), m.functions.size());
    for (const FunctionPlan& f : plan.functions) {
      SCOPED_TRACE(f.function);
      EXPECT_EQ(prover.prove_le(f.planned_bytes, f.naive_bytes).truth, SymTruth::proven_true)
          << f.planned_bytes.str() << " vs " << f.naive_bytes.str();
      int planned_allocs = 0;
      for (const PlannedAlloc& a : f.allocs)
        planned_allocs += a.placement == AllocPlacement::storage;
      reused += planned_allocs - static_cast<int>(f.storages.size());
      (f.is_static ? static_plans : symbolic_plans) += 1;
      for (int trial = 0; trial < 10; ++trial) {
        SymBinding at = random_binding(m, rng);
        int64_t naive = evaluate(f.naive_bytes, at), planned = evaluate(f.planned_bytes, at);
        EXPECT_LE(planned, naive) << binding_str(at);
        EXPECT_LE(live_peak_bytes(f, at), planned) << binding_str(at);
        if (f.is_static) {
          EXPECT_LE(live_peak_bytes(f, at), f.arena_bytes);
        }
        expect_no_live_overlap(f, at);
      }
      if (f.is_static) {
        int64_t every_own = 0;  // each tensor its own aligned buffer at the bounds
        for (const PlannedAlloc& a : f.allocs)
          if (a.placement == AllocPlacement::storage)
            every_own += (*upper_bound(a.bytes) + 63) / 64 * 64;
        EXPECT_LE(f.arena_bytes, every_own);
      }
    }
  }
  EXPECT_GT(reused, 10) << "the fixtures should exercise storage reuse";
  EXPECT_GT(static_plans, 0);
  EXPECT_GT(symbolic_plans, 0);
}

TEST(ModelPlan, GoldenPlanOfASmallFixture) {
  SymProver prover;
  std::string path = test::source_path("tests/model/plan_reuse.wmod");
  Module m = load_module(path, prover);
  std::string text = plan_str(plan_memory(m, prover), m, SymBinding{{"m", 3}, {"n", 5}});
  EXPECT_TRUE(test::matches_golden(text, "tests/golden/model/plan_reuse.plan.txt"));
  // The same through the command.
  auto [code, out] = test::run_weft("model plan '" + path + "' --bind m=3,n=5");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, text);
}

VmValue varied_tensor(const Shape& shape, double seed) {
  return VmValue{std::make_shared<Tensor<double>>(test::varied_tensor(shape, seed))};
}

std::vector<double> leaves(const VmValue& v) {
  if (const Tensor<double>* t = v.tensor()) return t->data;
  std::vector<double> out;
  for (const VmValue& x : *v.tuple()) {
    auto l = leaves(x);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

struct RunCase {
  const char* file;
  const char* function;
  std::vector<Shape> shapes;
};

const std::vector<RunCase>& run_cases() {
  static const std::vector<RunCase> cases = {
      {"tests/model/tiny_mlp.wmod",
       "main",
       {{2, 3, 32}, {1, 1, 32}, {1, 32, 48}, {1, 32, 48}, {1, 48, 32}}},
      {"tests/model/plan_reuse.wmod", "main", {{1, 7, 64}, {1, 64, 32}}},
      {"tests/model/plan_reuse.wmod", "bounded", {{5, 64}, {5, 32}}},
      {"tests/model/plan_reuse.wmod", "ranked", {{3, 4}}},
      {"tests/model/cast_and_calls.wmod", "main", {{6, 64}, {2, 64}}},
      {"tests/model/plan_views.wmod", "main", {{3, 6}, {6}}},
  };
  return cases;
}

TEST(ModelPlan, VmWithThePlanGivesTheSameBitsPoisonedOrNot) {
  for (const RunCase& c : run_cases()) {
    SCOPED_TRACE(std::string(c.file) + " " + c.function);
    SymProver prover;
    Module m = load_module(test::source_path(c.file), prover);
    std::vector<VmValue> args;
    for (size_t i = 0; i < c.shapes.size(); ++i)
      args.push_back(varied_tensor(c.shapes[i], 1.0 + i));
    VmOptions unplanned;
    unplanned.plan = false;
    Vm reference(m, unplanned);
    std::vector<double> want = leaves(reference.run(c.function, args));
    ASSERT_FALSE(want.empty());
    EXPECT_FALSE(std::all_of(want.begin(), want.end(), [&](double v) { return v == want[0]; }));
    for (bool arena : {true, false})
      for (bool poison : {false, true}) {
        VmOptions options;
        options.poison = poison;
        options.static_arena = arena;
        Vm vm(m, options);
        EXPECT_EQ(leaves(vm.run(c.function, args)), want) << "poison " << poison;
        // Sized at the run's binding, the plan never holds more than keeping every tensor.
        if (!arena) {
          EXPECT_LE(vm.stats().peak_planned_bytes, vm.stats().peak_naive_bytes);
        }
      }
  }
}

// A reshape is a view: no allocation of its own, its operand's storage in use while it is read
// (b must not take a's storage), a parameter viewed in place, and the VM copies nothing for it.
TEST(ModelPlan, AReshapeViewsItsOperandAndKeepsItsStorageInUse) {
  SymProver prover;
  std::string path = test::source_path("tests/model/plan_views.wmod");
  Module m = load_module(path, prover);
  ModulePlan plan = plan_memory(m, prover);
  EXPECT_TRUE(test::matches_golden(plan_str(plan, m, SymBinding{{"n", 3}}),
                                   "tests/golden/model/plan_views.plan.txt"));
  const FunctionPlan& f = plan.functions.at(0);
  std::map<std::string, const PlannedAlloc*> by_var;
  for (const PlannedAlloc& a : f.allocs) by_var[a.var] = &a;
  for (const char* view : {"r", "rb", "flat", "w6", "o"}) EXPECT_FALSE(by_var.count(view)) << view;
  ASSERT_TRUE(by_var.count("a") && by_var.count("b") && by_var.count("c") && by_var.count("p"));
  EXPECT_EQ(by_var["a"]->last_use, 4);  // c reads r, a view of a
  EXPECT_NE(by_var["a"]->storage, by_var["b"]->storage);
  EXPECT_EQ(by_var["c"]->last_use, 7);                        // m reads flat, a view of c
  EXPECT_EQ(by_var["p"]->placement, AllocPlacement::output);  // the result views it

  const Tensor<double> x = test::varied_tensor({3, 6}, 1.0), w = test::varied_tensor({6}, 2.0);
  std::vector<double> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 6; ++j) {
      double v = x.data[static_cast<size_t>(i * 6 + j)];
      want.push_back((std::exp(v) + v * v) * v + w.data[static_cast<size_t>(j)]);
    }
  ASSERT_FALSE(std::all_of(want.begin(), want.end(), [&](double v) { return v == want[0]; }));
  std::vector<VmValue> args = {VmValue{std::make_shared<Tensor<double>>(x)},
                               VmValue{std::make_shared<Tensor<double>>(w)}};
  for (bool poison : {false, true}) {
    VmOptions options;
    options.poison = poison;
    Vm vm(m, options);
    VmValue out = vm.run("main", args);
    ASSERT_TRUE(out.tensor());
    EXPECT_EQ(out.tensor()->shape, (Shape{3, 3, 2}));
    std::vector<double> got = out.tensor()->data;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::fabs(want[i]))) << i;
    // a, b, c, m and p: five tensors of 3 x 6 f32 values; the five reshapes copy nothing.
    EXPECT_EQ(vm.stats().total_alloc_bytes, 5 * 18 * 4);
  }
}

// A plan that puts two tensors live at once into the same bytes: with poisoning, the result
// changes (the test that the poisoning run above could fail).
TEST(ModelPlan, AWrongPlanIsCaughtByPoisoning) {
  SymProver prover;
  Module m = load_module(test::source_path("tests/model/plan_reuse.wmod"), prover);
  PlanOptions po;
  po.element_bytes = 8;
  ModulePlan plan = plan_memory(m, prover, po);
  FunctionPlan* f = nullptr;
  for (FunctionPlan& x : plan.functions)
    if (x.function == "bounded") f = &x;
  ASSERT_TRUE(f && f->is_static && f->storages.size() >= 2);
  std::vector<VmValue> args = {varied_tensor({5, 64}, 1), varied_tensor({5, 32}, 2)};
  VmOptions unplanned;
  unplanned.plan = false;
  std::vector<double> want = leaves(Vm(m, unplanned).run("bounded", args));
  // a and b are live together (a is read by c after b is made): give b a's offset.
  const PlannedAlloc *a = nullptr, *b = nullptr;
  for (const PlannedAlloc& x : f->allocs) {
    if (x.var == "a") a = &x;
    if (x.var == "b") b = &x;
  }
  ASSERT_TRUE(a && b && a->storage != b->storage);
  f->storages[static_cast<size_t>(b->storage)].offset =
      f->storages[static_cast<size_t>(a->storage)].offset;
  VmOptions options;
  options.poison = true;
  options.given_plan = plan;
  std::vector<double> got = leaves(Vm(m, options).run("bounded", args));
  EXPECT_NE(got, want);
}

// A static plan's arena is sized by the bounds; a call far below them is sized at its binding
// (a model bounded at 4096 rows run on 5 must not hold memory for 4096), one near them uses it.
constexpr const char* kWideBounds = R"(module wide
sym 1 <= n <= 4096

fn main(x: f32[n, 64], y: f32[n, 64]) -> f32[n, 64] {
  dataflow {
    a = exp(x)
    b = mul(a, y)
    c = exp(b)
    d = add(c, a)
  }
  return d
}
)";

TEST(ModelPlan, AStaticPlanRunFarBelowItsBoundsIsSizedAtItsBinding) {
  SymProver prover;
  Module m = parse_module(kWideBounds, "wide.wmod", prover);
  for (int64_t n : {5, 4000}) {
    SCOPED_TRACE(n);
    std::vector<VmValue> args = {varied_tensor({n, 64}, 1), varied_tensor({n, 64}, 2)};
    VmOptions unplanned;
    unplanned.plan = false;
    std::vector<double> want = leaves(Vm(m, unplanned).run("main", args));
    EXPECT_FALSE(std::all_of(want.begin(), want.end(), [&](double v) { return v == want[0]; }));
    Vm vm(m);
    const FunctionPlan* plan = vm.plan().find("main");
    ASSERT_TRUE(plan && plan->is_static);
    EXPECT_EQ(leaves(vm.run("main", args)), want);
    EXPECT_EQ(leaves(vm.run("main", args)), want);  // the second call reuses what the first held
    int64_t arena_f32 = plan->arena_bytes / 2;      // the VM counts f32 bytes; the arena holds f64
    int64_t tensor_f32 = n * 64 * 4;
    if (n == 5) {
      EXPECT_LT(vm.stats().peak_planned_bytes, 8 * tensor_f32);
      EXPECT_GT(arena_f32, 100 * vm.stats().peak_planned_bytes);
    } else {
      EXPECT_GE(vm.stats().peak_planned_bytes, arena_f32);
    }
  }
}

// An allocation beyond the memory limit is refused before it is tried, naming the binding, its
// shape at the binding and the dim that makes it big; under the limit the same run succeeds.
TEST(ModelPlan, AnAllocationBeyondTheMemoryLimitNamesTheTensorAndItsBigDim) {
  SymProver prover;
  Module m = parse_module(kWideBounds, "wide.wmod", prover);
  std::vector<VmValue> args = {varied_tensor({3000, 64}, 1), varied_tensor({3000, 64}, 2)};
  for (bool plan : {true, false}) {
    SCOPED_TRACE(plan);
    VmOptions options;
    options.plan = plan;
    options.memory_limit_bytes = 4 << 20;  // the inputs alone take 3 MiB as f64
    try {
      Vm(m, options).run("main", args);
      ADD_FAILURE() << "expected the run to be refused";
    } catch (const UserError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("wide.wmod"), std::string::npos) << what;
      EXPECT_NE(what.find("f32[n, 64] = [3000, 64]"), std::string::npos) << what;
      EXPECT_NE(what.find("the dim that makes it big: n = 3000"), std::string::npos) << what;
      EXPECT_NE(what.find("more than the 4.0 MiB this process may use"), std::string::npos) << what;
    }
    options.memory_limit_bytes = 64 << 20;
    EXPECT_EQ(leaves(Vm(m, options).run("main", args)).size(), 3000u * 64);
  }
}

// tiny_llama's plan is static (every variable bounded) and reuses storage in every function.
TEST(ModelPlan, TinyLlamaPlansAreStaticAndReuseStorage) {
  SymProver prover;
  Module m = load_module(test::source_path("examples/models/tiny_llama.wmod"), prover);
  ModulePlan plan = plan_memory(m, prover);
  SymBinding at{{"b", 2}, {"n", 16}, {"p", 16}, {"t", 32}};
  for (const FunctionPlan& f : plan.functions) {
    SCOPED_TRACE(f.function);
    EXPECT_TRUE(f.is_static);
    if (f.function == "qkv" || f.function == "attend" || f.function == "mlp") {
      EXPECT_LT(evaluate(f.planned_bytes, at), evaluate(f.naive_bytes, at));
    }
  }
}

}  // namespace
}  // namespace weft
