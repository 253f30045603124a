// Speed of the symbolic shape arithmetic as shape deduction uses it: building normal forms,
// parsing, evaluating, bounding, and proofs by each method (Z3 cold and cached).
#include <benchmark/benchmark.h>

#include "sym/evaluate.h"
#include "sym/interval.h"
#include "sym/parse.h"
#include "sym/prove.h"

namespace weft {
namespace {

struct Vars {
  SymVar b{"b", 1, 64};
  SymVar n{"n", 1, 4096};
  SymVar s{"s", 0};
  SymVar t{"t", 0};
  SymScope scope;
  Vars() {
    scope.declare("b", 1, 64);
    scope.declare("n", 1, 4096);
    scope.declare("s", 0);
    scope.declare("t", 0);
  }
};

const Vars& vars() {
  static const Vars v;
  return v;
}

// Shape deduction's daily bread: a reshape's element count, a strided conv's output length, a
// padded sequence length, a concat.
void BM_BuildShapeExpressions(benchmark::State& state) {
  const Vars& v = vars();
  for (auto _ : state) {
    SymExpr numel = v.b * v.n * 32 * 128;
    SymExpr conv = floordiv(v.n + 2 * 1 - 3, 2) + 1;
    SymExpr padded = floordiv(v.n + 63, 64) * 64;
    SymExpr concat = v.n + v.s + padded;
    benchmark::DoNotOptimize(numel);
    benchmark::DoNotOptimize(conv);
    benchmark::DoNotOptimize(concat);
  }
  state.SetItemsProcessed(state.iterations() * 4);
}
BENCHMARK(BM_BuildShapeExpressions);

void BM_BuildMinMaxMod(benchmark::State& state) {
  const Vars& v = vars();
  for (auto _ : state) {
    SymExpr e = min(v.n, v.s + 1) + floormod(4 * v.n + 6, 8) + max(2 * v.s, 2 * v.t);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_BuildMinMaxMod);

void BM_Parse(benchmark::State& state) {
  const Vars& v = vars();
  for (auto _ : state) {
    SymExpr e = parse_sym_expr("floordiv(b * (n + 2 * 3 - 7), 2) + min(s, n) * 4", v.scope);
    benchmark::DoNotOptimize(e);
  }
}
BENCHMARK(BM_Parse);

void BM_Equality(benchmark::State& state) {
  const Vars& v = vars();
  SymExpr a = v.b * v.n * 4096 + floordiv(v.s, 4);
  SymExpr c = floordiv(v.s, 4) + 4096 * v.n * v.b;
  for (auto _ : state) benchmark::DoNotOptimize(a == c);
}
BENCHMARK(BM_Equality);

void BM_Evaluate(benchmark::State& state) {
  const Vars& v = vars();
  SymExpr e = v.b * v.n * 4096 + floordiv(v.n + 63, 64) * 64;
  SymBinding at{{"b", 4}, {"n", 1000}};
  for (auto _ : state) benchmark::DoNotOptimize(evaluate(e, at));
}
BENCHMARK(BM_Evaluate);

void BM_UpperBound(benchmark::State& state) {
  const Vars& v = vars();
  SymExpr e = v.b * v.n * 4096 + floordiv(v.n + 63, 64) * 64;
  for (auto _ : state) benchmark::DoNotOptimize(upper_bound(e));
}
BENCHMARK(BM_UpperBound);

// Proves `c` every iteration: with a fresh prover (`cold`: the whole procedure, no cache) or with
// one prover (after the first iteration, answers come from its cache).
void prove_loop(benchmark::State& state, const SymCondition& c, SymMethod expected, bool cold) {
  SymProver warm;
  for (auto _ : state) {
    SymProof p;
    if (cold) {
      SymProver fresh;
      p = fresh.prove(c);
    } else {
      p = warm.prove(c);
    }
    benchmark::DoNotOptimize(p);
    if (p.method != expected) state.SkipWithError("decided by another method");
  }
}

void BM_ProveByNormalForm(benchmark::State& state) {
  const Vars& v = vars();
  prove_loop(state, {SymRel::eq, v.b * v.n * 32 * 128, v.n * 4096 * v.b}, SymMethod::normal_form,
             true);
}
BENCHMARK(BM_ProveByNormalForm);

void BM_ProveByInterval(benchmark::State& state) {
  const Vars& v = vars();
  prove_loop(state, {SymRel::le, v.n, v.n * v.b}, SymMethod::interval, true);
}
BENCHMARK(BM_ProveByInterval);

void BM_ProveByRemainderRelaxation(benchmark::State& state) {
  const Vars& v = vars();
  prove_loop(state, {SymRel::le, v.s, floordiv(v.s + 63, 64) * 64}, SymMethod::interval, true);
}
BENCHMARK(BM_ProveByRemainderRelaxation);

void BM_DisproveBySampling(benchmark::State& state) {
  const Vars& v = vars();
  prove_loop(state, {SymRel::eq, v.n, v.b}, SymMethod::sampling, true);
}
BENCHMARK(BM_DisproveBySampling);

void BM_ProveByZ3(benchmark::State& state) {
  const Vars& v = vars();
  prove_loop(state, {SymRel::eq, min(v.s, v.t) + max(v.s, v.t), v.s + v.t}, SymMethod::z3, true);
}
BENCHMARK(BM_ProveByZ3)->Unit(benchmark::kMillisecond);

void BM_ProveCached(benchmark::State& state) {
  const Vars& v = vars();
  prove_loop(state, {SymRel::eq, min(v.s, v.t) + max(v.s, v.t), v.s + v.t}, SymMethod::z3, false);
}
BENCHMARK(BM_ProveCached);

}  // namespace
}  // namespace weft

BENCHMARK_MAIN();
