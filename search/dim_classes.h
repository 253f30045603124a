// Dimension classes: which axes of the input program's inputs are the same axis (joined by
// elementwise ops or a matmul contraction), which of them the program reduces, and which survive
// into each output dim. The search uses them as necessary conditions: an operator that reduces an
// axis the program never reduces, or combines two different axes elementwise, cannot be part of an
// equivalent µGraph (absent cancellation, which abstract expressions exclude too).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace weft {

// Class of one tensor dim: >= 0 a class id; kUnit a size-1 dim; kAnyClass unknown (no pruning).
inline constexpr int8_t kUnit = -1;
inline constexpr int8_t kAnyClass = -2;
using DimClassList = std::array<int8_t, 4>;

struct DimClasses {
  bool usable = false;  // false when the program uses operators the analysis does not follow
  std::vector<DimClassList> input_dims;   // per program input
  std::vector<DimClassList> output_dims;  // per program output
  std::vector<bool> reduced;              // per class: the program sums (or maxes) over it

  bool is_reduced(int8_t c) const { return c == kAnyClass || (c >= 0 && reduced[c]); }
};

// Analyzes a program whose composites are expanded.
DimClasses analyze_dim_classes(const Graph& program);

}  // namespace weft
