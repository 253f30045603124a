// An e-graph of abstract expressions with equality saturation under rewrite rules.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absexpr/axioms.h"
#include "absexpr/pattern.h"
#include "absexpr/term.h"

namespace weft {

using ClassId = uint32_t;
inline constexpr ClassId kNoClass = ~ClassId{0};

struct ENode {
  TermOp op = TermOp::var;
  int64_t k = 0;  // as in TermNode
  ClassId a = kNoClass;
  ClassId b = kNoClass;
  friend bool operator==(const ENode&, const ENode&) = default;
};

struct ENodeHash {
  size_t operator()(const ENode& n) const;
};

struct SaturationLimits {
  size_t max_nodes = 200000;
  double max_seconds = 20.0;
  int max_iterations = 200;
};

// size_limit: the target's reduction sizes multiply beyond what factorization rules are made for.
enum class SaturationStop { saturated, node_limit, time_limit, iteration_limit, size_limit };
const char* saturation_stop_name(SaturationStop r);

struct SaturationStats {
  SaturationStop stop = SaturationStop::saturated;
  int iterations = 0;
  size_t nodes = 0;
  size_t classes = 0;
  size_t rules = 0;
  double seconds = 0;
};

// A rule compiled to patterns, one direction.
struct Rewrite {
  std::string name;
  PatternPair pat;
};
// Both directions of every `both_ways` axiom, one of the others.
std::vector<Rewrite> compile_axioms(const std::vector<Axiom>& axioms);

class EGraph {
 public:
  // Most variables a rule may use (substitutions are fixed-size arrays: no allocation per match).
  static constexpr int kMaxVars = 4;
  static constexpr int kMaxSizeVars = 2;

  // Adds a term (its var indices are the store's). sum(1, x) / max(1, x) collapse to x.
  ClassId add_term(const TermStore& store, TermId t);
  ClassId add(ENode n);
  ClassId find(ClassId c) const;
  // The class of a node whose operands are classes of this graph, if it is represented.
  std::optional<ClassId> lookup(ENode n) const;
  bool merge(ClassId a, ClassId b);
  // Restores the congruence invariant (equal canonical nodes are in one class).
  void rebuild();

  // Applies the rules until nothing changes or a limit is hit. Leaves the graph rebuilt and with
  // every class pointing at its root (so find() is one step and the graph is safe to read
  // concurrently).
  SaturationStats saturate(const std::vector<Rewrite>& rules, const SaturationLimits& limits);

  size_t num_nodes() const { return memo_.size(); }
  size_t num_classes() const;
  // Canonical nodes of a root class.
  const std::vector<ENode>& nodes(ClassId root) const { return class_nodes_.at(root); }
  size_t class_capacity() const { return parent_.size(); }

 private:
  ENode canonical(ENode n) const;
  struct Subst {
    std::array<ClassId, kMaxVars> vars;
    std::array<int64_t, kMaxSizeVars> sizes;
  };
  // Backtracking matcher: `todo` holds (pattern node, class) pairs still to match; every complete
  // match is appended to `out`.
  void match_todo(const Pattern& p, std::vector<std::pair<int, ClassId>>& todo, Subst& s,
                  std::vector<Subst>& out) const;
  // Matches pattern node `node` against e-node `en` itself, then the rest of `todo`.
  void match_enode(const Pattern& p, int node, const ENode& en,
                   std::vector<std::pair<int, ClassId>>& todo, Subst& s,
                   std::vector<Subst>& out) const;
  ClassId instantiate(const Pattern& p, int node, const Subst& s);

  std::vector<ClassId> parent_;
  std::vector<std::vector<ENode>> class_nodes_;
  std::unordered_map<ENode, ClassId, ENodeHash> memo_;
};

}  // namespace weft
