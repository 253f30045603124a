// Seeded random program inputs from raw mt19937_64 draws.
#include "interp/random_inputs.h"

#include <random>

namespace weft {

namespace {

// SplitMix64 finalizer: spreads nearby (seed, index) pairs over unrelated generator seeds.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

Tensor<double> random_tensor(const Shape& shape, uint64_t seed, uint64_t index) {
  std::mt19937_64 gen(mix(mix(seed) ^ index));
  Tensor<double> t(shape, 0.0);
  for (double& v : t.data) {
    // 53 random bits -> [0, 1) exactly, then [-1, 1).
    double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;
    v = 2.0 * u - 1.0;
  }
  return t;
}

std::vector<Tensor<double>> random_inputs(const Graph& g, uint64_t seed) {
  std::vector<Tensor<double>> out;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    out.push_back(random_tensor(g.type(g.inputs[i]).shape, seed, i));
  return out;
}

}  // namespace weft
