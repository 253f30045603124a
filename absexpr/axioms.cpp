// The axioms of abstract expressions: each a named one-line rule with the reason it is there.
#include "absexpr/axioms.h"

#include <fmt/format.h>

#include <functional>
#include <map>

#include "core/error.h"

namespace weft {

const std::vector<Axiom>& eq_axioms() {
  static const std::vector<Axiom> axioms = {
      // Elements of a tensor are not ordered, and block graphs add/multiply in any order.
      {"add-comm", "(add ?x ?y)", "(add ?y ?x)", false, "operands of add may be swapped"},
      {"mul-comm", "(mul ?x ?y)", "(mul ?y ?x)", false, "operands of mul may be swapped"},
      {"add-assoc", "(add (add ?x ?y) ?z)", "(add ?x (add ?y ?z))", true,
       "a chain of adds may be grouped in any way (fused kernels regroup sums)"},
      {"mul-assoc", "(mul (mul ?x ?y) ?z)", "(mul ?x (mul ?y ?z))", true,
       "a chain of muls may be grouped in any way"},
      {"distribute", "(mul ?x (add ?y ?z))", "(add (mul ?x ?y) (mul ?x ?z))", true,
       "factoring a common operand out of a sum saves a multiplication"},
      {"div-add", "(add (div ?x ?z) (div ?y ?z))", "(div (add ?x ?y) ?z)", true,
       "one division after the sum instead of one per summand (softmax normalization)"},
      {"mul-div", "(mul ?x (div ?y ?z))", "(div (mul ?x ?y) ?z)", true,
       "division may move after a multiplication (RMSNorm's division after the matmul)"},
      {"div-div", "(div (div ?x ?y) ?z)", "(div ?x (mul ?y ?z))", true,
       "two divisions are one division by the product"},
      {"sum-add", "(sum ?i (add ?x ?y))", "(add (sum ?i ?x) (sum ?i ?y))", true,
       "a reduction is linear: it distributes over add"},
      {"sum-mul", "(sum ?i (mul ?x ?y))", "(mul (sum ?i ?x) ?y)", true,
       "a reduction may move into one factor (abstractly: elements are not distinguished)"},
      {"sum-div", "(sum ?i (div ?x ?y))", "(div (sum ?i ?x) ?y)", true,
       "a reduction may move into the numerator (divide once after reducing)"},
  };
  return axioms;
}

std::vector<Axiom> factorization_axioms(const std::set<int64_t>& sizes, TermOp reduction) {
  WEFT_CHECK(reduction == TermOp::sum || reduction == TermOp::max, "{} is not a reduction",
             term_op_name(reduction));
  const char* op = term_op_name(reduction);
  std::vector<Axiom> out;
  for (int64_t k : sizes) {
    // Factor pairs in increasing order of the outer size; trial division only up to sqrt(k).
    std::vector<int64_t> small, large;
    for (int64_t i = 2; i <= k / i; ++i) {
      if (k % i != 0) continue;
      small.push_back(i);
      if (i != k / i) large.push_back(k / i);
    }
    small.insert(small.end(), large.rbegin(), large.rend());
    for (int64_t i : small) {
      int64_t j = k / i;
      out.push_back(
          Axiom{fmt::format("{}-split-{}={}x{}", op, k, i, j), fmt::format("({} {} ?x)", op, k),
                fmt::format("({} {} ({} {} ?x))", op, i, op, j), true,
                "a reduction of k elements is i reductions of j elements (blocked for-loops)"});
    }
  }
  return out;
}

std::vector<Axiom> axioms_for(const TermStore& store, TermId target, bool* truncated) {
  std::vector<Axiom> all = eq_axioms();
  // With constants as terms (the screen before verification), two scales are one scale.
  if (store.constants_as_terms())
    all.push_back({"const-mul", "(mul (const) (const))", "(const)", false,
                   "a product of constants is a constant (scales merge)"});
  for (TermOp op : {TermOp::sum, TermOp::max})
    for (Axiom& a : factorization_axioms(reduction_sizes(store, target, op, truncated), op))
      all.push_back(std::move(a));
  return all;
}

namespace {

// Memoized: all products of sizes along a downward path starting at node `t`.
const std::set<int64_t>& path_products(const TermStore& store, TermId t, TermOp reduction,
                                       std::map<TermId, std::set<int64_t>>& memo,
                                       std::set<int64_t>& all, bool& truncated) {
  auto it = memo.find(t);
  if (it != memo.end()) return it->second;
  const TermNode& n = store.node(t);
  std::set<int64_t> here = {1};
  constexpr int64_t kCap = int64_t{1} << 40;  // far beyond any tensor dim product we search
  auto through = [&](TermId child, int64_t factor) {
    for (int64_t p : path_products(store, child, reduction, memo, all, truncated))
      if (p <= kCap / factor)
        here.insert(p * factor);
      else
        truncated = true;
  };
  // Uninterpreted: the operand's own paths still count, but start afresh below it.
  auto afresh = [&] {
    if (n.a != kNoTerm) path_products(store, n.a, reduction, memo, all, truncated);
    if (n.b != kNoTerm) path_products(store, n.b, reduction, memo, all, truncated);
  };
  switch (n.op) {
    case TermOp::add:
    case TermOp::mul:
    case TermOp::div:
      through(n.a, 1);
      through(n.b, 1);
      break;
    case TermOp::sum:
    case TermOp::max:
      if (n.op == reduction)
        through(n.a, n.k);
      else
        afresh();
      break;
    case TermOp::var:
    case TermOp::cst:
    case TermOp::fn:
    case TermOp::cat:
      afresh();
      break;
  }
  all.insert(here.begin(), here.end());
  return memo.emplace(t, std::move(here)).first->second;
}

}  // namespace

std::set<int64_t> reduction_sizes(const TermStore& store, TermId target, TermOp reduction,
                                  bool* truncated) {
  std::map<TermId, std::set<int64_t>> memo;
  std::set<int64_t> products;
  bool cut = false;
  path_products(store, target, reduction, memo, products, cut);
  if (truncated != nullptr) *truncated |= cut;
  std::set<int64_t> sizes;
  for (int64_t p : products)
    for (int64_t d = 2; d * d <= p; ++d)
      if (p % d == 0) {
        sizes.insert(d);
        sizes.insert(p / d);
      }
  for (int64_t p : products)
    if (p > 1) sizes.insert(p);
  return sizes;
}

const std::vector<SubAxiom>& sub_axioms() {
  static const std::vector<SubAxiom> axioms = {
      {"refl", "x ⊑ x", "a finished µGraph's output is its own subexpression"},
      {"trans", "x ⊑ y, y ⊑ z ⟹ x ⊑ z", "a prefix's tensor may feed a chain of later operators"},
      {"operand", "x ⊑ f(.., x, ..) for every function symbol f (and x ⊑ sum(k, x))",
       "every operator's inputs are subexpressions of its output (what makes Theorem 1 hold)"},
      {"eq", "x = x', y = y', x ⊑ y ⟹ x' ⊑ y'", "⊑ respects A_eq"},
  };
  return axioms;
}

}  // namespace weft
