// Structural hashes of µGraph values: equal hashes mean the same computation on the same inputs,
// whatever the names (the keys of the verifier's fingerprint cache).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace weft {

// Hash of a whole graph's structure (types, ops, attributes, block parameters, nested bodies).
uint64_t structural_hash(const Graph& g);

// For kernel graph `g`: one hash per value id, covering the value's entire cone. Input i hashes
// its position and type, so two programs with the same input signature share input hashes.
std::vector<uint64_t> value_hashes(const Graph& g);

}  // namespace weft
