// Seeded random program inputs, identical on every platform for a given seed.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace weft {

// Values uniform in [-1, 1) for every input of kernel graph `g`, in input order. Input i is drawn
// from std::mt19937_64 seeded with a mix of (seed, i), so programs with the same input shapes get
// the same inputs, and adding an input does not change the others. Doubles are built from raw
// 64-bit draws (std::uniform_real_distribution is implementation-defined).
std::vector<Tensor<double>> random_inputs(const Graph& g, uint64_t seed);

// One tensor of `shape` drawn as above from stream (seed, index).
Tensor<double> random_tensor(const Shape& shape, uint64_t seed, uint64_t index);

}  // namespace weft
