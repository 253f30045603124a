// The error bound of the finite-field test: per-element degree statistics of a graph and the
// probability that one test passes two non-equivalent programs (docs/verification.md, "Bound").
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace weft {

// Worst case over the elements of one tensor, each element written as a rational function N/D of
// the inputs, the uninterpreted-function outputs and the exponentials in its cone.
struct DegreeStats {
  double num = 0;          // degree of N
  double den = 0;          // degree of D
  double exps = 0;         // exp applications in the cone (at most the size of each source)
  double ufs = 0;          // uninterpreted applications in the cone (max: one per group member)
  double exp_arg_deg = 0;  // max deg(N) + deg(D) of an exp argument in the cone
  double uf_arg_deg = 0;   // max deg(N) + deg(D) of an uninterpreted argument in the cone
  friend bool operator==(const DegreeStats&, const DegreeStats&) = default;
};

// Statistics of every output of kernel graph `g` (graph-defined kernels and composites included).
std::vector<DegreeStats> degree_stats(const Graph& g);

// The three terms of the bound for one pair of corresponding outputs, and their sum (capped at 1).
struct TestBound {
  double exp_collision = 0;  // two distinct exponents equal in Z_q
  double uf_collision = 0;   // two distinct uninterpreted arguments equal in Z_p
  double polynomial = 0;     // the difference's numerator vanishing (Schwartz–Zippel, exp terms)
  double total = 0;
};
TestBound output_bound(const DegreeStats& a, const DegreeStats& b);

// max over outputs of output_bound(...).total: the chance that one test passes two programs that
// differ (any output).
double per_test_bound(const std::vector<DegreeStats>& a, const std::vector<DegreeStats>& b);

// Smallest t with per_test^t <= target (at least 1); throws UserError if per_test >= 1.
int tests_needed(double per_test, double target);

}  // namespace weft
