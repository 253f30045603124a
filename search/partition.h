// Partitioning a program the search cannot take whole into subprograms it can (Mirage §1 splits
// at operators outside its fragment and by size), and stitching the subprograms' µGraphs back
// into one µGraph of the whole program.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "search/config.h"

namespace weft {

struct SubProgram {
  std::vector<int> ops;          // indices into the program's ops: a run in program order
  Graph graph;                   // the subprogram (kernel level), its ops named as the program's
  std::vector<ValueId> inputs;   // the program value behind each input of `graph`
  std::vector<ValueId> outputs;  // the program value behind each output of `graph`
  // Why it is a part: "whole" (no partition needed), "operator outside the search" (one
  // operator the search cannot produce: kept as it is, not searched), or "size" (a run of
  // operators cut to the search's limits).
  std::string rule;
  bool searched = true;
};

// Whether the search can produce this operator: it is in the configuration's operator sets (a
// mean also when sum and scale are).
bool searchable(const Op& op, const SearchConfig& config);

// An elementwise table operator the search can place wherever a kernel or block graph computes:
// unary or binary (size-1 dims broadcast), at the kernel and block levels.
bool fusable_elementwise(OpKind kind);

// `config` with each fusable elementwise operator `program` uses added to its kernel and block
// operator sets. The search draws on the operators of the program it is given, so an activation
// the default sets leave out (relu, tanh, erf, ...) neither cuts the program into parts nor keeps
// a model's region from growing over it.
SearchConfig with_program_operators(SearchConfig config, const Graph& program);

// The parts of `program` (composites expanded), in program order. One part ("whole") when
// config.partition is off, or when every
// operator is searchable and the program fits the search: at most max_kernel_ops operators, or
// few enough that one block graph holds them and an accumulator per reduction or matmul (at most
// max_block_ops). Otherwise every unsearchable operator is a part of its own and each run of
// searchable operators between them is cut into pieces that fit, each as long as it can be among
// the cuts where the fewest values cross.
std::vector<SubProgram> partition_program(const Graph& program, const SearchConfig& config);

// The subprogram computing program ops `ops` (indices in program order, each op's operands
// produced outside the set or by an earlier op of it): its inputs are the values it reads from
// outside, in order of first use, and its outputs the values it produces that an op outside the
// set reads or that are program outputs, in op order. `rule` is left empty.
SubProgram subprogram_of(const Graph& program, const std::vector<int>& ops,
                         const std::string& name);

// The program with each part replaced by a µGraph of it (`replacements[i]`: a kernel graph with
// the inputs and outputs of parts[i].graph, in order). Values inside a replacement are renamed
// where they would clash.
Graph stitch(const Graph& program, const std::vector<SubProgram>& parts,
             const std::vector<Graph>& replacements);

}  // namespace weft
