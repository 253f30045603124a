// Model-level partition: the bindings of table operators the µGraph search can take, grouped per
// function into connected regions of bounded size (Mirage's Lax regions); model operators,
// call_lib, function calls, if, tuple/item/match_cast are the boundaries. At a function whose
// types are concrete, each region becomes a fixed-shape kernel-level µGraph (its live-ins are the
// inputs, its live-outs the outputs), and a region can be replaced by a call_ugraph of one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "model/module.h"
#include "search/config.h"

namespace weft {

struct ModelRegion {
  std::string function;
  int block = 0;                     // index of the block in the function
  std::vector<int> bindings;         // indices into the block's bindings, in program order
  std::vector<std::string> inputs;   // live-ins: values read but defined before, first use first
  std::vector<std::string> outputs;  // live-outs: values read outside the region or returned
  bool cut = false;                  // ended by the size bound (more connected bindings follow)
};

// Bindings per region unless the caller says otherwise: the one default of `weft compile MODEL`,
// `weft model partition`, weft.compile_model and the driver's options.
inline constexpr int kDefaultMaxRegionOps = 8;

struct PartitionOptions {
  // Bindings per region (a table operator each, composites counted once); larger connected runs
  // are cut. optimize() partitions a region further when it is too large for one search.
  int max_region_ops = kDefaultMaxRegionOps;
  // The operator sets that decide which operators the search can take (search/partition.h's
  // searchable).
  SearchConfig search;
};

// Whether a table operator joins regions: the search can take it (searchable, or an elementwise
// operator it adds to its sets for the region: with_program_operators), or it is a composite
// whose expansion it can take whole. `operand_ranks` gives the composite's operand
// ranks for the probe expansion.
bool region_operator(OpKind kind, const std::vector<int>& operand_ranks,
                     const SearchConfig& config);

// The regions of every function of `module` (deduced, composites expanded), function by
// function, in program order. Only the top-level bindings of blocks are grouped (the arms of an
// if are left as they are). Deterministic.
std::vector<ModelRegion> partition_module(const Module& module, const PartitionOptions& options);

// "fn mlp: 2 regions\n  region 0 [block 0]: h0 h g0 g u a d o (8) in x mn wg wu wd out o\n":
// the listing `weft model partition` prints (golden-tested).
std::string regions_str(const std::vector<ModelRegion>& regions);

// The region as a kernel-level µGraph named `name`: inputs x0.. for the live-ins, operators in
// binding order with results y0.., outputs the live-outs. Nullopt (with `why`) when a type it
// needs is not concrete (a symbolic dim or a rank-only tensor). Canonical names, so identical
// regions give identical text wherever they are.
std::optional<Graph> region_graph(const Module& module, const ModelRegion& region,
                                  const std::string& name, std::string* why = nullptr);

// `module` with each region replaced by `var = call_ugraph(UGRAPH, live-ins...)` at its first
// binding (`ugraphs[i]` names the µGraph of regions[i], already in the module; empty: kept as
// it is), with `item`s giving back each live-out's name when there are several. The result
// must be deduced again (deduce_module).
Module replace_regions(const Module& module, const std::vector<ModelRegion>& regions,
                       const std::vector<std::string>& ugraphs);

}  // namespace weft
