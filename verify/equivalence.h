// The equivalence verifier: are two µGraphs equal as functions (modulo uninterpreted functions)?
// Randomized finite-field tests repeated until a computed error bound is reached, plus a
// floating-point check of numerical acceptability.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "verify/fingerprint_cache.h"
#include "verify/float_check.h"

namespace weft {

struct VerifyOptions {
  double target_error = std::ldexp(1.0, -60);  // stop when the bound is at most this
  uint64_t seed = 1;                           // all randomness derives from it
  int threads = 0;                             // matmul and input threads; 0: all cores
  int max_discards = 8;                        // zero-divisor redraws before giving up
  bool float_check = true;                     // also run the f32 / f64 comparison
};

// abandoned: the caller's give-up time came before a verdict (check's `give_up_at`).
enum class Verdict { equivalent, not_equivalent, outside_lax, error, abandoned };
const char* verdict_name(Verdict v);

struct VerifyResult {
  Verdict verdict = Verdict::error;
  double per_test_bound = 1;  // chance one test passes non-equivalent programs
  double bound = 1;           // per_test_bound ^ tests_run (equivalent verdicts)
  int tests_needed = 0;
  int tests_run = 0;             // tests completed (passing, or the failing one)
  int tests_discarded = 0;       // zero divisors
  int output = -1;               // not_equivalent: first differing output
  std::vector<int64_t> element;  // and the element's multi-index in it
  std::string message;           // outside_lax / error: what happened
  std::optional<FloatCheck> floats;
};

// Throws UserError unless both programs take the same inputs (count, types) and produce the same
// outputs (count, types), matched by position.
void check_signatures(const Graph& a, const Graph& b);

// Compares many candidates against one target: the target's fingerprints (and the inputs, and any
// kernel-level prefix a candidate shares with it) are computed once per test seed and cached, and
// the target's floating-point reference once. Thread-safe.
class EquivalenceChecker {
 public:
  EquivalenceChecker(Graph target, VerifyOptions options,
                     std::shared_ptr<FingerprintCache> cache = nullptr);
  // `give_up_at`: a time budget's end. The check gives up (Verdict::abandoned, no bound) before a
  // test the previous one says would end past it, or at a matmul or kernel-level op of a test or
  // of the float check that starts after it; the default never gives up.
  VerifyResult check(const Graph& candidate,
                     std::chrono::steady_clock::time_point give_up_at =
                         std::chrono::steady_clock::time_point::max()) const;
  // Does the target's share of the first candidate's work ahead of time: its fingerprints of the
  // first test (kept in the cache) and its floating-point reference. Timing it gives the cost of
  // one test (optimize's budget plan: driver/optimize.cpp). Returns tests_needed(target), an
  // estimate of what a candidate needs. A verifier limit (a program too deep for the test) is
  // left for check() to report.
  int prepare() const;
  // The finite-field tests check() runs on `candidate` when they all pass (a degree bound: cheap).
  // A UserError when the programs are too large for the test (check() reports it as a limit).
  int tests_needed(const Graph& candidate) const;
  const Graph& target() const { return target_; }
  const FingerprintCache& cache() const { return *cache_; }

 private:
  template <class V>
  VerifyResult run_tests(const Graph& candidate, VerifyResult r,
                         std::chrono::steady_clock::time_point give_up_at) const;

  const FloatReference& float_ref() const;
  uint64_t test_seed(int test, int attempt) const;

  Graph target_;
  VerifyOptions options_;
  std::shared_ptr<FingerprintCache> cache_;
  struct LazyFloatReference {
    std::once_flag once;
    FloatReference value;
  };
  std::shared_ptr<LazyFloatReference> float_ref_ = std::make_shared<LazyFloatReference>();
};

// One-shot form: EquivalenceChecker(a, options).check(b).
VerifyResult verify_equivalent(const Graph& a, const Graph& b, const VerifyOptions& options = {});

}  // namespace weft
