// Proofs about symbolic expressions: equality, <= and <, decided by the cheapest method that
// can (normal form, then intervals, then sampled counterexamples, then Z3), three-valued, never
// wrong: an unknown answer comes with the condition to check at run time instead.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sym/evaluate.h"
#include "sym/expr.h"
#include "sym/z3_decide.h"

namespace weft {

enum class SymRel { eq, le, lt };
enum class SymTruth { proven_true, proven_false, unknown };
enum class SymMethod { normal_form, interval, sampling, z3, none };

const char* sym_rel_symbol(SymRel rel);  // "==", "<=", "<"
const char* sym_truth_name(SymTruth truth);
const char* sym_method_name(SymMethod method);

// lhs REL rhs, claimed for every binding of the variables within their bounds at which both
// sides are defined (every divisor positive).
struct SymCondition {
  SymRel rel = SymRel::eq;
  SymExpr lhs;
  SymExpr rhs;

  std::string str() const;  // "2 * n == m + 1"
  // Whether it holds at `binding`; throws UserError when a side cannot be evaluated there (a
  // variable missing or out of bounds, overflow, a divisor <= 0).
  bool holds(const SymBinding& binding) const;
  // An equivalent condition, cheaper to check and clearer to report: everything moved to one
  // side, divided by the common factor, split by sign (2 * n + 4 == 2 * m + 4 becomes n == m;
  // lt becomes le).
  SymCondition reduced() const;
};

struct SymProof {
  SymTruth truth = SymTruth::unknown;
  SymMethod method = SymMethod::none;  // what decided it
  // Set exactly when proven_false: a binding within the bounds at which both sides evaluate and
  // the condition fails (confirmed by evaluate(), whoever found it).
  std::optional<SymBinding> counterexample;
  std::string note;  // unknown: why not decided
};

// What a caller must do about a condition: nothing (proven), report it (disproven, with the
// counterexample), or check `runtime_check` when the values are known.
struct SymObligation {
  SymProof proof;
  std::optional<SymCondition> runtime_check;  // set exactly when the proof is unknown
};

struct SymProverOptions {
  bool use_z3 = true;
  SymZ3Options z3;
  int samples = 16;               // bindings tried for a counterexample before Z3
  size_t cache_capacity = 65536;  // answers kept per cache; a full cache is cleared
};

struct SymProverStats {
  int64_t queries = 0;
  int64_t by_normal_form = 0;
  int64_t by_interval = 0;
  int64_t by_sampling = 0;
  int64_t by_z3 = 0;
  int64_t unknown = 0;
  int64_t z3_calls = 0;          // Z3 queries actually run
  int64_t z3_cache_hits = 0;     // Z3 answers reused (for the same difference of sides)
  int64_t proof_cache_hits = 0;  // whole answers reused (for the same condition)
};

// Thread-safe: any number of threads may prove concurrently. Answers that took more than the
// normal form are cached per condition (shape deduction asks the same questions after every
// pass), Z3 answers per query; both caches are shared by the threads.
class SymProver {
 public:
  explicit SymProver(SymProverOptions options = {});

  SymProof prove(const SymCondition& c);
  SymProof prove_eq(const SymExpr& a, const SymExpr& b) { return prove({SymRel::eq, a, b}); }
  SymProof prove_le(const SymExpr& a, const SymExpr& b) { return prove({SymRel::le, a, b}); }
  SymProof prove_lt(const SymExpr& a, const SymExpr& b) { return prove({SymRel::lt, a, b}); }
  SymObligation require(const SymCondition& c);

  SymProverStats stats() const;

 private:
  struct Z3Key {
    bool equality;
    SymExpr d;
    std::vector<SymExpr> defined;
    friend bool operator==(const Z3Key&, const Z3Key&) = default;
  };
  struct Z3KeyHash {
    size_t operator()(const Z3Key& k) const;
  };

  struct ProofKey {
    SymRel rel;
    SymExpr lhs, rhs;
    friend bool operator==(const ProofKey&, const ProofKey&) = default;
  };
  struct ProofKeyHash {
    size_t operator()(const ProofKey& k) const;
  };

  SymProof prove_uncached(const SymCondition& c, const SymExpr& d);
  SymZ3Answer decide_with_z3(const Z3Key& key);
  std::optional<SymBinding> find_counterexample(const SymCondition& c) const;
  SymProof finish(SymProof proof);

  SymProverOptions options_;
  std::mutex mu_;  // guards the caches
  std::unordered_map<Z3Key, SymZ3Answer, Z3KeyHash> z3_cache_;
  std::unordered_map<ProofKey, SymProof, ProofKeyHash> proof_cache_;
  std::atomic<int64_t> queries_{0}, by_normal_form_{0}, by_interval_{0}, by_sampling_{0}, by_z3_{0},
      unknown_{0}, z3_calls_{0}, z3_cache_hits_{0}, proof_cache_hits_{0};
};

}  // namespace weft
