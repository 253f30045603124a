// Benchmarks of the finite-field verifier: modular multiply-adds per second per core (field
// matmul kernel, one thread) and one full-size finite-field test of rms_norm_linear
// (16x4096 · 4096x6144) on all cores.
#include <benchmark/benchmark.h>

#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "ir/parser.h"
#include "verify/equivalence.h"
#include "verify/field.h"
#include "verify/field_domain.h"
#include "verify/field_matmul.h"
#include "verify/fingerprint_cache.h"

namespace weft {
namespace {

Graph load_example(const std::string& name) {
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/examples/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_graph(ss.str(), name);
}

// C[m, n] = A[m, k] · B[k, n] over Z_p; counter "muladds/s" is per thread used.
void BM_FieldMatmul(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const auto threads = static_cast<int>(state.range(3));
  const bool scalar = state.range(4) != 0;
  std::mt19937_64 rng(1);
  std::vector<uint64_t> A(m * k), B(k * n), C(m * n);
  for (auto& v : A) v = rng() % ff::kP;
  for (auto& v : B) v = rng() % ff::kP;
  ff::set_force_scalar_matmul(scalar);
  for (auto _ : state) {
    ff::matmul_mod(A.data(), B.data(), C.data(), m, k, n, ff::kP, threads);
    benchmark::DoNotOptimize(C.data());
  }
  ff::set_force_scalar_matmul(false);
  const double muladds = static_cast<double>(m * k * n) * static_cast<double>(state.iterations());
  state.counters["muladds/s/core"] =
      benchmark::Counter(muladds / threads, benchmark::Counter::kIsRate);
  state.SetLabel(scalar ? "scalar-u128" : ff::matmul_kernel_name());
}
// Single-threaded: the rate is per CPU second of the one thread (robust on a shared machine).
BENCHMARK(BM_FieldMatmul)
    ->Args({16, 4096, 1024, 1, 0})
    ->Args({16, 4096, 1024, 1, 1})
    ->Unit(benchmark::kMillisecond);
// Both cores, wall-clock time.
BENCHMARK(BM_FieldMatmul)
    ->Args({16, 4096, 6144, 2, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One finite-field test of the input program rms_norm_linear at full size: drawing the inputs
// (X and the 25M-element W), rms_norm and the 16x4096x6144 matmul, on both cores.
void BM_RmsNormLinearOneTest(benchmark::State& state) {
  const Graph g =
      load_example(state.range(0) ? "rms_norm_linear.fused.weft" : "rms_norm_linear.weft");
  uint64_t seed = 1;
  for (auto _ : state) {
    FieldDomain<FieldP> domain(FieldTestParams::draw(seed++, 0));
    auto out = field_fingerprints<FieldP>(g, domain, nullptr);
    benchmark::DoNotOptimize(out[0].data.data());
  }
  state.SetLabel(state.range(0) ? "fused program" : "input program");
}
BENCHMARK(BM_RmsNormLinearOneTest)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The whole verification of the example pair (tests until 2^-60, without the float check).
void BM_VerifyRmsNormLinear(benchmark::State& state) {
  const Graph a = load_example("rms_norm_linear.weft"),
              b = load_example("rms_norm_linear.fused.weft");
  VerifyOptions o;
  o.float_check = false;
  for (auto _ : state) benchmark::DoNotOptimize(verify_equivalent(a, b, o).bound);
}
BENCHMARK(BM_VerifyRmsNormLinear)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

}  // namespace
}  // namespace weft

BENCHMARK_MAIN();
