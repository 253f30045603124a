// Running generated code against the reference interpreter, shared by the code-generator tests:
// CUDA in host emulation, and the CPU backend.
#pragma once

#include <cstdint>
#include <vector>

#include "interp/compare.h"
#include "ir/graph.h"
#include "runtime/program.h"

namespace weft::test {

// Runs `prog` (a unit of `plan`, usually in emulation) on `reference`'s seeded inputs rounded to
// their dtypes, and compares every output with the interpreter running `reference` (f64, same
// rounded inputs) within the output dtype's tolerance. `reference` is the graph `plan` was lowered
// from, or the input program a search candidate must compute. Expects non-constant inputs and
// non-trivial reference outputs.
std::vector<Comparison> compare_emulation(const Graph& reference, const ProgramPlan& plan,
                                          const Program& prog, uint64_t seed);

// Compiles `g` with the CPU backend, runs it and the interpreter (f64) on the same seeded inputs,
// and expects every output non-trivial and within f32's tolerance.
void expect_cpu_backend_matches_interpreter(const Graph& g, uint64_t seed);

}  // namespace weft::test
