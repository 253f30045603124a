// The rule generator's enumeration (TASO §3.1): every graph of up to `depth` operators over the
// table's rewrite rows and a pool of inputs whose dims are variables, without duplicate
// computation, each fingerprinted by the finite-field evaluator at two instantiations.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/budget.h"
#include "ir/graph.h"

namespace weft {

// A dim as a linear form over the pool's variables: form[0] + sum form[v] * variable v.
inline constexpr int kMaxRuleVariables = 4;
using DimForm = std::array<int64_t, kMaxRuleVariables + 1>;

struct PoolInput {
  std::string name;
  std::vector<int> dims;  // variable indices (0-based)
};

// The inputs graphs are built over and the variables their dims are. Inputs of the same shape are
// interchangeable (canonical renaming permutes them).
struct InputPool {
  std::vector<std::string> variables;
  std::vector<PoolInput> inputs;
};
// a, b: [n, m]; w, v: [m, k]; u: [k, n]: same-shape pairs for elementwise operators and
// concatenation, chains for matmul.
InputPool default_input_pool();

struct GenOp {
  OpKind kind = OpKind::add;
  Attrs attrs;
  std::vector<int> operands;  // value indices: the pool's inputs first, then results in op order
  std::vector<int> results;
};

struct GenGraph {
  std::vector<GenOp> ops;
  std::vector<int> sinks;  // values no op reads: the graph's outputs
  // Per value (the pool's inputs, then results in op order), at both instantiations. Shapes and
  // structural hashes are recomputed from the ops when needed (gen_cones, build_program): kept
  // per graph they would hold most of the memory at depth 4.
  std::vector<uint64_t> value_fingerprint;
  size_t num_values() const { return value_fingerprint.size(); }
};

struct EnumerateOptions {
  int depth = 3;
  uint64_t seed = 1;
  // The two instantiations fingerprints are taken at (sizes per variable, none 1).
  std::array<std::vector<int64_t>, 2> sizes = {std::vector<int64_t>{2, 3, 5},
                                               std::vector<int64_t>{3, 5, 7}};
  std::function<void(const std::string&)> progress;  // a line now and then; may be empty
};

struct EnumerateResult {
  std::vector<GenGraph> graphs;  // the pool's one- and two-input identity graphs first
  StopReason stop = StopReason::complete;
  int64_t outside_lax = 0;  // graphs dropped: exp of an exponentiated value
};

// The graphs, in a deterministic order. Budget: time, and states (graphs).
EnumerateResult enumerate_graphs(const InputPool& pool, const EnumerateOptions& options,
                                 const Budget& budget);

// The structural hash of an op over its operands' cone hashes (sorted for a commutative op), and
// the cone hashes of every value of `g` when pool input i is named `input_ids[i]` (the identity
// gives the hashes the enumeration deduplicates by; a permutation, a renamed graph's).
uint64_t gen_op_hash(OpKind kind, const Attrs& attrs, std::vector<uint64_t> operand_cones);
uint64_t gen_input_cone(int input_id);
uint64_t gen_result_cone(uint64_t op_hash, size_t result);
std::vector<uint64_t> gen_cones(const GenGraph& g, size_t pool_inputs,
                                const std::vector<int>& input_ids,
                                std::vector<uint64_t>* op_hashes);

// `g` as a kernel program at `sizes` (per variable): every pool input, the ops with results named
// by `names` (value index → name; empty: t0, t1, ... in op order), outputs `outputs`.
Graph build_program(const InputPool& pool, const GenGraph& g, const std::vector<int64_t>& sizes,
                    const std::vector<int>& outputs, const std::vector<std::string>& names = {},
                    const std::vector<int>& op_order = {});

}  // namespace weft
