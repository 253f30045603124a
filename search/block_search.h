// Enumeration of block graphs for one graph-defined kernel and one schedule: loop-body operators,
// accumulators, post-loop operators and savers, each DAG generated once (canonical order), every
// new tensor checked by the abstract-expression oracle.
#pragma once

#include <array>
#include <functional>
#include <vector>

#include "core/rational.h"
#include "ir/graph.h"
#include "search/block_space.h"
#include "search/config.h"
#include "search/dim_classes.h"
#include "search/expr_oracle.h"
#include "search/stats.h"

namespace weft {

// Constants the search may use in scale/shift: those of the input program.
struct SearchConstants {
  std::vector<Rational> factors;
  std::vector<Rational> offsets;
  // Uses per graph (block or kernel): as many as the program has (a mean counts as a scale), since
  // abstract expressions cannot see constants.
  int max_scales = 0;
  int max_shifts = 0;
};

// One operator of a sketch. Values are numbered: the iterators' tiles first (one per operand),
// then each op's result in order.
struct SketchOp {
  OpKind kind = OpKind::add;
  int8_t a = -1, b = -1;  // operand value numbers
  int8_t dim = -1;        // reductions, accum_concat
  int16_t constant = -1;  // index into factors (scale) or offsets (shift)
  Stage stage = Stage::loop;
  int64_t to = 1;  // reductions: the size reduced to (> 1 only in split-reduction combines)
  friend bool operator==(const SketchOp&, const SketchOp&) = default;
};

struct SketchSave {
  int8_t value = -1;
  std::array<int8_t, 3> omap = {-1, -1, -1};
  friend bool operator==(const SketchSave&, const SketchSave&) = default;
};

// A complete block graph in compact form, with the types and terms of its outputs.
struct BlockSketch {
  BlockSchedule schedule;
  std::vector<SketchOp> ops;
  std::vector<SketchSave> saves;
  std::vector<TensorType> output_types;
  std::vector<TermRef> output_terms;
  std::vector<DimClassList> output_classes;
  std::vector<std::array<int64_t, 4>> output_parts;  // SType::part of each output
  std::vector<DimClassList> output_part_classes;     // SType::part_cls of each output
  friend bool operator==(const BlockSketch& a, const BlockSketch& b) {
    return a.schedule == b.schedule && a.ops == b.ops && a.saves == b.saves;
  }
};

struct BlockSearchInput {
  std::vector<TensorType> operand_types;
  std::vector<TermRef> operand_terms;
  // Axis classes (dim_classes.h): the analysis of the program and each operand's dims.
  const DimClasses* classes = nullptr;
  std::vector<DimClassList> operand_classes;
  // Final mode: the kernel completes the µGraph, so every saved tensor must have the type of a
  // program output and a term equivalent to it (output i's type is final_output_types[i]).
  bool final_mode = false;
  std::vector<TensorType> final_output_types;
};

// Enumerates every block graph for `in` under schedule `s` and calls `emit` for each, in a
// deterministic order, until `emit` returns false (the caller wants no more: the kernel search
// when the memo is full). Returns the number of states visited.
int64_t search_block_graphs(const BlockSearchInput& in, const BlockSchedule& s,
                            const SearchConfig& config, const SearchConstants& constants,
                            ExprOracle& oracle, SearchStats& stats, StopSignal& stop,
                            const std::function<bool(BlockSketch&&)>& emit);

}  // namespace weft
