// Property test of the model rewriter (issue 31): random model functions over the rewrite
// vocabulary, rewritten with the default rules by either search (backtracking, e-graph); every
// function a search rewrote passed its finite-field check, still deduces, and computes what the
// original does on the VM.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "exec/vm.h"
#include "model/deduce.h"
#include "model/parser.h"
#include "rewrite/default_rules.h"
#include "rewrite/model_rewrite.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("property");

namespace weft {
namespace {

struct Value {
  std::string name;
  std::vector<std::string> dims;  // "n" or a constant
};

std::string dims_text(const std::vector<std::string>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// A function of `ops` operators over x0, x1: [n, 8], w0, w1: [8, 8], w2: [8, 4], each operand
// drawn from the values of a fitting shape (later values more often, so chains form).
std::string random_module(std::mt19937& rng, int ops) {
  std::vector<Value> values = {{"x0", {"n", "8"}},
                               {"x1", {"n", "8"}},
                               {"w0", {"8", "8"}},
                               {"w1", {"8", "8"}},
                               {"w2", {"8", "4"}}};
  std::string body;
  auto pick = [&](auto fits) -> int {
    std::vector<int> ok;
    for (size_t i = 0; i < values.size(); ++i)
      if (fits(values[i])) ok.push_back(static_cast<int>(i));
    if (ok.empty()) return -1;
    // Favour recent values: the last third twice as often.
    std::uniform_int_distribution<size_t> d(0, ok.size() + ok.size() / 3);
    size_t k = d(rng);
    return ok[k < ok.size() ? k : ok.size() - 1 - (k - ok.size())];
  };
  int made = 0;
  while (made < ops) {
    const std::string name = fmt::format("v{}", made);
    const int kind = std::uniform_int_distribution<int>(0, 7)(rng);
    const int a = pick([](const Value&) { return true; });
    const Value va = values[static_cast<size_t>(a)];
    std::string line;
    std::vector<std::string> dims = va.dims;
    if (kind <= 1) {  // add, mul: a second operand of the same shape
      const int b = pick([&](const Value& v) { return v.dims == va.dims; });
      line = fmt::format("{}({}, {})", kind == 0 ? "add" : "mul", va.name,
                         values[static_cast<size_t>(b)].name);
    } else if (kind <= 3) {  // matmul: a right operand whose rows are a's columns
      const int b = pick([&](const Value& v) { return v.dims[0] == va.dims[1]; });
      if (b < 0) continue;
      line = fmt::format("matmul({}, {})", va.name, values[static_cast<size_t>(b)].name);
      dims = {va.dims[0], values[static_cast<size_t>(b)].dims[1]};
    } else if (kind == 4) {
      line = fmt::format("{}({})", std::uniform_int_distribution<int>(0, 1)(rng) ? "exp" : "relu",
                         va.name);
    } else if (kind == 5) {
      line = fmt::format("scale({}, factor={})", va.name,
                         std::uniform_int_distribution<int>(0, 1)(rng) ? "2" : "1/2");
    } else if (kind == 6) {  // sum over a dim
      const int d = std::uniform_int_distribution<int>(0, 1)(rng);
      line = fmt::format("sum({}, dim={})", va.name, d);
      dims[static_cast<size_t>(d)] = "1";
    } else {  // concat along the constant dim with an operand of the same shape
      if (va.dims[1] == "1" || va.dims[1] == "n") continue;
      const int b = pick([&](const Value& v) { return v.dims == va.dims; });
      line = fmt::format("concat({}, {}, dim=1)", va.name, values[static_cast<size_t>(b)].name);
      dims[1] = std::to_string(2 * std::stoi(va.dims[1]));
    }
    body += fmt::format("    {} = {}\n", name, line);
    values.push_back({name, dims});
    ++made;
  }
  return fmt::format(
      "module random\nsym 1 <= n <= 16\n\nfn main(x0: f32[n, 8], x1: f32[n, 8], w0: f32[8, 8], "
      "w1: f32[8, 8], w2: f32[8, 4]) -> f32{} {{\n  dataflow {{\n{}  }}\n  return {}\n}}\n",
      dims_text(values.back().dims), body, values.back().name);
}

VmValue varied(const Shape& shape, double seed) {
  return VmValue{std::make_shared<Tensor<double>>(test::varied_tensor(shape, seed, 0.5))};
}

// Each random function through one search mode.
void check_random_functions(RewriteMode mode) {
  constexpr int kTrials = 24;
  std::mt19937 rng(20261128);
  int rewritten = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::string text = random_module(rng, 6 + trial % 5);
    SCOPED_TRACE(text);
    SymProver prover;
    const Module m = parse_module(text, "random.wmod", prover);
    ModelRewriteOptions options;
    options.mode = mode;
    options.time_budget_s = 1;
    options.state_budget = 60;
    options.at = {{"n", 5}};
    const ModelRewriteResult r = rewrite_model(m, default_rules(), options, prover);
    const FunctionRewrite& f = r.functions.at(0);
    EXPECT_TRUE(f.rejected.empty()) << f.rejected;
    if (!f.used) {
      EXPECT_EQ(r.module, m);
      continue;
    }
    ++rewritten;
    EXPECT_EQ(f.check.verdict, Verdict::equivalent);
    EXPECT_LT(f.after_s, f.before_s);
    EXPECT_NO_THROW(check_module(r.module, prover));
    for (int64_t n : {3, 5}) {
      const std::vector<VmValue> args = {varied({n, 8}, 0.1), varied({n, 8}, 1.7),
                                         varied({8, 8}, 2.3), varied({8, 8}, 3.1),
                                         varied({8, 4}, 4.9)};
      Vm before(m), after(r.module);
      const std::vector<double> want = before.run("main", args).tensor()->data;
      const std::vector<double> got = after.run("main", args).tensor()->data;
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-4 * std::max(1.0, std::abs(want[i]))) << "n=" << n;
    }
  }
  // The property says something only if the search rewrote a fair share of the functions.
  EXPECT_GE(rewritten, kTrials / 4) << rewritten << " of " << kTrials << " rewritten";
  std::cout << rewritten << " of " << kTrials << " random functions rewritten ("
            << rewrite_mode_name(mode) << ")\n";
}

TEST(ModelRewriteProperty, RewrittenRandomFunctionsComputeTheSame) {
  check_random_functions(RewriteMode::backtrack);
}

TEST(ModelRewriteProperty, RandomFunctionsFromTheEGraphComputeTheSame) {
  check_random_functions(RewriteMode::egraph);
}

}  // namespace
}  // namespace weft
