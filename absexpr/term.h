// Hash-consed abstract-expression terms (Mirage §4.3): a thread-safe store with an s-expression
// printer and parser.
#pragma once

#include <tbb/concurrent_unordered_map.h>

// The term index's allocator: TBB's scalable one, but the standard one under ThreadSanitizer,
// which cannot see libtbbmalloc's own synchronization (it reported the allocator's mmap racing the
// next owner's first write: `make test-tsan`, fresh clone of dd3867a). (GCC's -Warray-bounds
// misreads TBB's node casts with the standard allocator, so the other builds keep TBB's.)
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEFT_TERM_INDEX_STD_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define WEFT_TERM_INDEX_STD_ALLOCATOR 1
#endif

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ir/ops.h"

namespace weft {

struct TermNode;
#ifdef WEFT_TERM_INDEX_STD_ALLOCATOR
using TermIndexAllocator = std::allocator<std::pair<const TermNode, uint32_t>>;
#else
using TermIndexAllocator = tbb::tbb_allocator<std::pair<const TermNode, uint32_t>>;
#endif

// The function symbols of abstract expressions. `cst` is the one constant leaf: every `shift`
// offset becomes add(x, cst) (the value is abstracted away like element positions are). `fn` is an
// uninterpreted function of one operand: the operator OpKind(k) of the op table (exp, and the
// elementwise operators without a Lax formula), printed under the operator's name. `sum` and `max`
// carry the number of elements they reduce. `cat` joins tensors of different expressions
// (concat); it is uninterpreted.
enum class TermOp : uint8_t { var, cst, add, mul, div, fn, sum, max, cat };

using TermId = uint32_t;
inline constexpr TermId kNoTerm = ~TermId{0};

struct TermNode {
  TermOp op = TermOp::var;
  int64_t k = 0;  // var: index of the name; fn: the OpKind; sum/max: elements reduced; else 0
  TermId a = kNoTerm;
  TermId b = kNoTerm;
  friend bool operator==(const TermNode&, const TermNode&) = default;
};

// Number of term operands of an op (0, 1 or 2).
int term_arity(TermOp op);
// "add", "sum", ...; `var` prints as the variable's name instead, `fn` as its operator's name.
const char* term_op_name(TermOp op);
// Operators that appear in terms as uninterpreted functions (`fn`): exp, and the elementwise
// operators without a Lax formula (ir/ops.h).
bool is_term_function(OpKind kind);
// The symbol a printed head names: an op other than var with k = 0, or fn with k = the
// operator. False when `head` names none.
bool read_term_symbol(std::string_view head, TermOp& op, int64_t& k);
// The printed head of a node: term_op_name, or the operator's name for fn.
const char* term_symbol_name(TermOp op, int64_t k);

// Owns every term; equal terms get equal ids. Thread-safe: any number of threads may create and
// read terms concurrently. Ids are dense and assigned in creation order, so a single-threaded
// build (as of_graph and the tests do) gives the same ids every run; answers that depend on terms
// never depend on ids.
class TermStore {
 public:
  // `constants_as_terms`: a multiplication by an operator's constant attribute (scale's factor,
  // a mean's 1/k) is mul(x, cst) instead of x (of_graph.h), for the screen that catches a
  // constant in the wrong place before verification (search/constant_screen.h); the search's own
  // terms abstract constants away (notes §2).
  explicit TermStore(bool constants_as_terms = false);
  ~TermStore();
  bool constants_as_terms() const { return constants_as_terms_; }
  TermStore(const TermStore&) = delete;
  TermStore& operator=(const TermStore&) = delete;

  TermId var(std::string_view name);
  TermId cst();
  TermId add(TermId a, TermId b) { return make({TermOp::add, 0, a, b}); }
  TermId mul(TermId a, TermId b) { return make({TermOp::mul, 0, a, b}); }
  TermId div(TermId a, TermId b) { return make({TermOp::div, 0, a, b}); }
  // The uninterpreted function `kind` (is_term_function) applied to a.
  TermId fn(OpKind kind, TermId a) {
    return make({TermOp::fn, static_cast<int64_t>(kind), a, kNoTerm});
  }
  // sum(1, x) and max(1, x) are x itself: reducing one element is the identity, and keeping the
  // form canonical lets the oracle's lookups match without a rule that grows every e-class.
  TermId sum(int64_t k, TermId a) { return make({TermOp::sum, k, a, kNoTerm}); }
  TermId max(int64_t k, TermId a) { return make({TermOp::max, k, a, kNoTerm}); }
  TermId cat(TermId a, TermId b) { return make({TermOp::cat, 0, a, b}); }
  // Validates the node's shape (arity, sizes >= 1, operands exist) and interns it.
  TermId make(TermNode node);

  const TermNode& node(TermId id) const;
  std::string var_name(int64_t index) const;
  size_t size() const { return count_.load(std::memory_order_acquire); }

  // S-expression: X, (const), (add a b), (sum 4096 a), (exp a).
  std::string str(TermId id) const;
  // Parses the printed form (whitespace-insensitive). Throws UserError saying what was expected.
  TermId parse(std::string_view text);
  // Number of nodes in the term tree (shared subterms counted each time they occur).
  size_t tree_size(TermId id) const;

 private:
  struct NodeHash {
    size_t operator()(const TermNode& n) const;
  };
  static constexpr int kChunkBits = 14;
  static constexpr size_t kChunkSize = size_t{1} << kChunkBits;
  static constexpr size_t kMaxChunks = size_t{1} << 14;

  // Nodes live in fixed-size chunks that never move, so readers need no lock.
  std::unique_ptr<std::atomic<TermNode*>[]> chunks_;
  bool constants_as_terms_ = false;
  std::atomic<uint32_t> count_{0};
  // Lookups of existing terms, the search's innermost operation from every worker thread, take
  // no lock: a shared lock's atomic update of one cache line was a fifth of the cycles with two
  // threads (docs/benchmarks.md). New terms are added under `insert_mu_`.
  std::mutex insert_mu_;
  tbb::concurrent_unordered_map<TermNode, TermId, NodeHash, std::equal_to<TermNode>,
                                TermIndexAllocator>
      index_;
  mutable std::shared_mutex mu_;  // names_ and name_index_
  std::deque<std::string> names_;
  std::unordered_map<std::string, int64_t> name_index_;
};

}  // namespace weft
