// Pruning-oracle throughput on the rms_norm_linear target: e-graph build, cold and cached queries.
#include <benchmark/benchmark.h>

#include <fstream>
#include <random>
#include <sstream>
#include <unordered_set>

#include "absexpr/of_graph.h"
#include "absexpr/oracle.h"
#include "ir/parser.h"

namespace weft {
namespace {

TermId rms_target(TermStore& store) {
  std::string path = std::string(WEFT_SOURCE_DIR) + "/examples/rms_norm_linear.weft";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return abstract_outputs(parse_graph(text.str(), path), store).at(0);
}

// Random prefixes like the search builds: operators over the inputs with plausible sizes.
TermId random_prefix(std::mt19937& rng, TermStore& s, const std::vector<TermId>& leaves,
                     int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  if (depth == 0 || pick(4) == 0)
    return leaves[static_cast<size_t>(pick(static_cast<int>(leaves.size())))];
  static const int64_t kSizes[] = {2, 4, 16, 64, 256, 4096, 3, 96, 8192};
  TermId a = random_prefix(rng, s, leaves, depth - 1);
  switch (pick(9)) {
    case 0:
      return s.add(a, random_prefix(rng, s, leaves, depth - 1));
    case 1:
    case 2:
      return s.sum(kSizes[pick(9)], s.mul(a, random_prefix(rng, s, leaves, depth - 1)));
    case 3:
      return s.mul(a, random_prefix(rng, s, leaves, depth - 1));
    case 4:
      return s.div(a, random_prefix(rng, s, leaves, depth - 1));
    case 5:
      return s.sum(kSizes[pick(9)], a);
    case 6:
      return s.fn(OpKind::sqrt, a);
    case 7:
      return s.add(a, s.cst());
    default:
      return s.fn(OpKind::exp, a);
  }
}

std::vector<TermId> pool(TermStore& store, size_t n) {
  std::vector<TermId> leaves = {store.var("X"), store.var("W")};
  std::mt19937 rng(1);
  // Distinct terms only: a repeated term would be a cached query.
  std::vector<TermId> out;
  std::unordered_set<TermId> seen;
  while (out.size() < n) {
    TermId t = random_prefix(rng, store, leaves, 5);
    if (seen.insert(t).second) out.push_back(t);
  }
  return out;
}

void BM_OracleBuild(benchmark::State& state) {
  TermStore store;
  TermId target = rms_target(store);
  for (auto _ : state) {
    Oracle oracle(store, target);
    benchmark::DoNotOptimize(oracle.viable_classes());
  }
}
BENCHMARK(BM_OracleBuild)->Unit(benchmark::kMillisecond);

// Every query is the first for its term, and the oracle is fresh, so no subterm is cached either.
void BM_QueryCold(benchmark::State& state) {
  TermStore store;
  TermId target = rms_target(store);
  std::vector<TermId> terms = pool(store, 20000);
  for (auto _ : state) {
    state.PauseTiming();
    auto oracle = std::make_unique<Oracle>(store, target);
    state.ResumeTiming();
    for (TermId t : terms) benchmark::DoNotOptimize(oracle->classify(t));
    state.PauseTiming();
    oracle.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(terms.size()));
}
BENCHMARK(BM_QueryCold)->Unit(benchmark::kMillisecond);

void BM_QueryCached(benchmark::State& state) {
  TermStore store;
  TermId target = rms_target(store);
  std::vector<TermId> terms = pool(store, 20000);
  Oracle oracle(store, target);
  for (TermId t : terms) oracle.classify(t);
  for (auto _ : state)
    for (TermId t : terms) benchmark::DoNotOptimize(oracle.classify(t));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(terms.size()));
}
BENCHMARK(BM_QueryCached)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace weft

BENCHMARK_MAIN();
