// The search's oracle backed by abstract expressions (absexpr/): one saturated e-graph per output
// of the input program, built once per search.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absexpr/oracle.h"
#include "absexpr/term.h"
#include "ir/graph.h"
#include "search/expr_oracle.h"

namespace weft {

class AbsExprOracle : public ExprOracle {
 public:
  // `program` must have its composites expanded.
  explicit AbsExprOracle(const Graph& program, const SaturationLimits& limits = {});

  TermRef input_term(int index) override { return inputs_.at(static_cast<size_t>(index)); }
  TermRef op_term(OpKind kind, TermRef a, TermRef b, int64_t k, const Rational& constant) override;
  bool viable(TermRef t) override;
  bool equivalent(TermRef t, int output) override;

  // False when saturation hit a limit: then nothing is pruned (Theorem 1 must hold).
  bool complete() const;
  // Whether every output of the kernel graph `candidate` (the program's inputs and outputs) is
  // in its output's class of the e-graphs as saturated: always, for a candidate the search
  // emits, when complete(); otherwise a sign it is equivalent rather than merely not excluded.
  bool proven(const Graph& candidate);
  std::string text(TermRef t) const override { return store_.str(t); }
  TermRef parse(const std::string& text) override { return store_.parse(text); }
  int64_t memory_bytes() const override;
  TermRef output_term(int output) const { return outputs_.at(static_cast<size_t>(output)); }

 private:
  TermStore store_;
  const uint64_t id_;  // unique per oracle for the life of the process: keys op_term's memo
  std::vector<TermId> inputs_;
  std::vector<TermId> outputs_;
  std::vector<std::unique_ptr<Oracle>> oracles_;
};

}  // namespace weft
