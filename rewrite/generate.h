// `weft rules generate`: TASO's substitution generator on weft's table. Graphs with equal
// fingerprints pair into candidate rules, which are pruned by canonical input renaming and by
// TASO's two common-subgraph rules, then checked by finite-field identity testing at sizes the
// enumeration did not use.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/budget.h"
#include "rewrite/enumerate.h"
#include "rewrite/rule.h"

namespace weft {

struct GenerateOptions {
  int depth = 3;
  uint64_t seed = 1;
  bool check = true;  // finite-field check of every rule kept (else: status unverified)
  bool prove = true;  // Z3 proof from the axioms (rewrite/axioms.h) of every rule kept
  int threads = 0;    // for the checks and proofs (0: the cores)
  std::function<void(const std::string&)> progress;
};

struct GenerateCounts {
  int64_t graphs = 0;
  int64_t candidates = 0;      // pairs of distinct graphs with equal fingerprints
  int64_t after_renaming = 0;  // distinct up to renaming inputs of the same shape
  int64_t after_common = 0;    // without a common subgraph at the inputs or at the outputs
  int64_t proven = 0;          // by Z3 from the axioms (and checked by finite field)
  int64_t finite_field = 0;    // by finite-field identity testing alone
  int64_t rejected = 0;        // failed the finite-field check at fresh sizes (kept out)
};

struct GenerateResult {
  std::vector<Rule> rules;
  GenerateCounts counts;
  StopReason stop = StopReason::complete;
  double seconds = 0;
};

GenerateResult generate_rules(const InputPool& pool, const GenerateOptions& options,
                              const Budget& budget);

// "rules: C candidates, R after renaming, S after common subgraphs, P proven, F by finite field"
std::string counts_line(const GenerateCounts& counts);

}  // namespace weft
