// Property tests of the symbolic arithmetic on thousands of seeded random expressions, each kept
// as a tree the test evaluates itself (in 128 bits, floor semantics) as the ground truth:
//   - the normal form evaluates like the tree wherever the tree is defined;
//   - print/parse round-trips and renormalizing changes nothing;
//   - interval bounds contain every sampled value;
//   - no false equality or inequality: pairs that differ at a sampled point are never proven,
//     and every disproof's counterexample really violates the claim.
// Each test first checks that its inputs are not trivial (operators covered, values varied,
// equalities proven by every method, Z3 included). WEFT_SYM_SEED=k runs them on other seeds.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <tuple>

#include "sym/evaluate.h"
#include "sym/interval.h"
#include "sym/parse.h"
#include "sym/prove.h"
#include "sym/rewrite.h"
#include "tests/sym_test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("property");

namespace weft {
namespace {

enum class Op { constant, var, add, sub, mul, floordiv, mod, min, max };
constexpr int kOpCount = 9;
const char* const kVarNames[] = {"n", "m", "b", "s", "t", "u", "x"};
constexpr int kVarCount = 7;

struct Node;
using NodeRef = std::shared_ptr<const Node>;
struct Node {
  Op op = Op::constant;
  int64_t value = 0;  // constant
  int var = 0;        // var: index into kVarNames
  NodeRef a, b;
};

NodeRef make(Op op, NodeRef a, NodeRef b) {
  auto n = std::make_shared<Node>();
  n->op = op;
  n->a = std::move(a);
  n->b = std::move(b);
  return n;
}
NodeRef constant(int64_t v) {
  auto n = std::make_shared<Node>();
  n->value = v;
  return n;
}
NodeRef variable(int i) {
  auto n = std::make_shared<Node>();
  n->op = Op::var;
  n->var = i;
  return n;
}

const SymVar& var_of(int i) {
  return *test::sym_scope().find(kVarNames[i]);
}

// ---- the ground truth: exact evaluation of the tree ----

using Int = __int128;
constexpr Int kLimit = Int{1} << 62;

// nullopt when the tree is undefined at `at` (a divisor <= 0) or leaves +-2^62 anywhere.
std::optional<Int> truth(const Node& e, const SymBinding& at) {
  auto fits = [](Int v) -> std::optional<Int> {
    if (v > kLimit || v < -kLimit) return std::nullopt;
    return v;
  };
  switch (e.op) {
    case Op::constant:
      return e.value;
    case Op::var:
      return at.at(kVarNames[e.var]);
    default:
      break;
  }
  auto a = truth(*e.a, at), b = truth(*e.b, at);
  if (!a || !b) return std::nullopt;
  switch (e.op) {
    case Op::add:
      return fits(*a + *b);
    case Op::sub:
      return fits(*a - *b);
    case Op::mul:
      return fits(*a * *b);
    case Op::floordiv:
    case Op::mod: {
      if (*b <= 0) return std::nullopt;
      Int q = *a / *b;
      if (*a % *b != 0 && *a < 0) --q;
      return e.op == Op::floordiv ? q : *a - q * *b;
    }
    case Op::min:
      return std::min(*a, *b);
    case Op::max:
      return std::max(*a, *b);
    case Op::constant:
    case Op::var:
      break;
  }
  return std::nullopt;
}

// The tree through the API's operators (normalizing at every step).
SymExpr build(const Node& e) {
  switch (e.op) {
    case Op::constant:
      return e.value;
    case Op::var:
      return var_of(e.var);
    case Op::add:
      return build(*e.a) + build(*e.b);
    case Op::sub:
      return build(*e.a) - build(*e.b);
    case Op::mul:
      return build(*e.a) * build(*e.b);
    case Op::floordiv:
      return floordiv(build(*e.a), build(*e.b));
    case Op::mod:
      return floormod(build(*e.a), build(*e.b));
    case Op::min:
      return min(build(*e.a), build(*e.b));
    case Op::max:
      return max(build(*e.a), build(*e.b));
  }
  return 0;
}

// The tree in the text form, fully parenthesized.
std::string text(const Node& e) {
  switch (e.op) {
    case Op::constant:
      return e.value < 0 ? "(" + std::to_string(e.value) + ")" : std::to_string(e.value);
    case Op::var:
      return kVarNames[e.var];
    case Op::add:
      return "(" + text(*e.a) + " + " + text(*e.b) + ")";
    case Op::sub:
      return "(" + text(*e.a) + " - " + text(*e.b) + ")";
    case Op::mul:
      return "(" + text(*e.a) + " * " + text(*e.b) + ")";
    case Op::floordiv:
      return "floordiv(" + text(*e.a) + ", " + text(*e.b) + ")";
    case Op::mod:
      return "mod(" + text(*e.a) + ", " + text(*e.b) + ")";
    case Op::min:
      return "min(" + text(*e.a) + ", " + text(*e.b) + ")";
    case Op::max:
      return "max(" + text(*e.a) + ", " + text(*e.b) + ")";
  }
  return "?";
}

// ---- random trees and bindings ----

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed + seed_offset()) {}

  static uint64_t seed_offset() {
    const char* env = std::getenv("WEFT_SYM_SEED");
    return env ? std::strtoull(env, nullptr, 10) * 0x9E3779B97F4A7C15ull : 0;
  }

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }

  NodeRef leaf() { return pick(20) < 11 ? variable(pick(kVarCount)) : constant(between(-9, 9)); }

  NodeRef divisor(int depth) {
    switch (pick(10)) {
      case 0:
      case 1:
        return variable(pick(3) == 0 ? 5 : pick(3));  // u, or n, m, b: all positive
      case 2:
        return make(Op::add, variable(pick(kVarCount)), constant(between(1, 9)));  // may be <= 0
      case 3:
        return expr(depth);
      default:
        return constant(between(1, 12));
    }
  }

  NodeRef expr(int depth) {
    if (depth <= 0 || pick(6) == 0) return leaf();
    Op op = static_cast<Op>(2 + pick(kOpCount - 2));
    switch (op) {
      case Op::mul:  // a shallower right side keeps degrees and term counts moderate
        return make(op, expr(depth - 1), expr(depth - 2));
      case Op::floordiv:
      case Op::mod:
        return make(op, expr(depth - 1), divisor(depth - 2));
      default:
        return make(op, expr(depth - 1), expr(depth - 1));
    }
  }

  SymBinding point() {
    SymBinding at;
    for (int i = 0; i < kVarCount; ++i) {
      const SymVar& v = var_of(i);
      int64_t lo = v.lo();
      int64_t value;
      if (v.hi()) {
        int r = pick(10);
        value = r == 0 ? lo : (r == 1 ? *v.hi() : between(lo, *v.hi()));
      } else {
        int r = pick(20);
        value = between(lo, lo + (r == 0 ? 1000000 : (r < 6 ? 2000 : 20)));
      }
      at[kVarNames[i]] = value;
    }
    return at;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

void count_ops(const Node& e, std::map<Op, int>& seen) {
  ++seen[e.op];
  if (e.a) count_ops(*e.a, seen);
  if (e.b) count_ops(*e.b, seen);
}

void count_atom_kinds(const SymExpr& e, std::map<SymAtomKind, int>& seen) {
  for (const SymTerm& t : e.terms())
    for (const SymFactor& f : t.factors) {
      ++seen[f.atom->kind];
      for (const SymExpr& a : f.atom->args) count_atom_kinds(a, seen);
    }
}

// A random expression that builds (construction rejects e.g. a divisor that is never positive).
struct Sample {
  NodeRef tree;
  SymExpr nf;
};
std::optional<Sample> sample(Gen& gen, int depth) {
  NodeRef tree = gen.expr(depth);
  try {
    return Sample{tree, build(*tree)};
  } catch (const UserError&) {
    return std::nullopt;
  }
}

TEST(SymProperty, NormalFormEvaluatesLikeTheTree) {
  Gen gen(20240514);
  std::map<Op, int> ops;
  std::map<SymAtomKind, int> atoms;
  int built = 0, rejected = 0, checks = 0, nf_overflow = 0, non_constant = 0;
  std::set<int64_t> values;
  for (int i = 0; i < 4000; ++i) {
    NodeRef tree = gen.expr(4);
    count_ops(*tree, ops);
    SymExpr nf;
    try {
      nf = build(*tree);
    } catch (const UserError&) {
      ++rejected;
      continue;
    }
    ++built;
    count_atom_kinds(nf, atoms);
    non_constant += nf.is_constant() ? 0 : 1;
    // The parser builds the same normal form from the tree's text.
    ASSERT_TRUE(parse_sym_expr(text(*tree), test::sym_scope()) == nf) << text(*tree);
    for (int p = 0; p < 10; ++p) {
      SymBinding at = gen.point();
      std::optional<Int> want = truth(*tree, at);
      if (!want) continue;
      SymEvalResult got = try_evaluate(nf, at);
      if (!got.value && got.error.find("overflow") != std::string::npos) {
        ++nf_overflow;  // expanded products can exceed int64 where the tree's order does not
        continue;
      }
      ASSERT_TRUE(got.value) << text(*tree) << " -> " << nf.str() << " at " << binding_str(at)
                             << ": " << got.error;
      ASSERT_EQ(*got.value, static_cast<int64_t>(*want))
          << text(*tree) << " -> " << nf.str() << " at " << binding_str(at);
      ++checks;
      values.insert(*got.value);
    }
  }
  // The inputs are not trivial: every operator, every atom kind, many distinct values.
  for (int op = 0; op < kOpCount; ++op) EXPECT_GE(ops[static_cast<Op>(op)], 500) << op;
  for (SymAtomKind k : {SymAtomKind::var, SymAtomKind::floordiv, SymAtomKind::mod, SymAtomKind::min,
                        SymAtomKind::max})
    EXPECT_GE(atoms[k], 200) << static_cast<int>(k);
  EXPECT_GE(built, 3800);
  EXPECT_GT(non_constant, built * 3 / 4);
  EXPECT_GE(checks, 25000);
  EXPECT_LE(nf_overflow, checks / 100);
  EXPECT_GE(values.size(), 2000u);
}

TEST(SymProperty, TextRoundTripsAndNormalizingIsIdempotent) {
  Gen gen(7);
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    auto s = sample(gen, 4);
    if (!s) continue;
    std::string printed = s->nf.str();
    SymExpr back = parse_sym_expr(printed, test::sym_scope());
    ASSERT_TRUE(back == s->nf) << text(*s->tree) << " printed as " << printed;
    ASSERT_EQ(back.str(), printed);
    ASSERT_EQ(back.hash(), s->nf.hash());
    // Rebuilding every atom through its constructor gives the same form.
    SymExpr again = map_variables(s->nf, [](const SymVar& v) -> SymExpr { return v; });
    ASSERT_TRUE(again == s->nf) << printed << " renormalizes to " << again.str();
    ++checked;
  }
  EXPECT_GE(checked, 2800);
}

TEST(SymProperty, BoundsContainEverySampledValue) {
  Gen gen(99);
  int checks = 0, finite = 0, tighter = 0;
  for (int i = 0; i < 2000; ++i) {
    auto s = sample(gen, 3);
    if (!s) continue;
    SymRange natural = natural_range(s->nf);
    SymRange refined = bounds(s->nf);
    if (refined.lo_finite() && refined.hi_finite()) ++finite;
    if (refined.lo > natural.lo || refined.hi < natural.hi) ++tighter;
    ASSERT_TRUE(refined.lo >= natural.lo && refined.hi <= natural.hi) << s->nf.str();
    for (int p = 0; p < 10; ++p) {
      SymBinding at = gen.point();
      SymEvalResult v = try_evaluate(s->nf, at);
      if (!v.value) continue;
      ASSERT_TRUE(natural.contains(*v.value)) << s->nf.str() << " at " << binding_str(at);
      ASSERT_TRUE(refined.contains(*v.value))
          << s->nf.str() << " at " << binding_str(at) << " outside ["
          << static_cast<int64_t>(refined.lo) << ", " << static_cast<int64_t>(refined.hi) << "]";
      auto ub = upper_bound(s->nf);
      if (ub) {
        ASSERT_LE(*v.value, *ub);
      }
      ++checks;
    }
  }
  EXPECT_GE(checks, 12000);
  EXPECT_GE(finite, 300);  // bounds that say something
  EXPECT_GE(tighter, 5);   // the monotone refinement does work
}

// ---- pairs for the prover ----

// Every subtree, by pointer, in a fixed order.
void subtrees(const NodeRef& e, std::vector<NodeRef>& out) {
  out.push_back(e);
  if (e->a) subtrees(e->a, out);
  if (e->b) subtrees(e->b, out);
}

// `root` with `target` replaced by `by`.
NodeRef replace(const NodeRef& root, const Node* target, const NodeRef& by) {
  if (root.get() == target) return by;
  if (!root->a) return root;
  NodeRef a = replace(root->a, target, by), b = replace(root->b, target, by);
  if (a == root->a && b == root->b) return root;
  return make(root->op, a, b);
}

NodeRef pick_node(Gen& gen, const NodeRef& root, std::optional<Op> op = std::nullopt) {
  std::vector<NodeRef> all, matching;
  subtrees(root, all);
  for (const NodeRef& n : all)
    if (!op || n->op == *op) matching.push_back(n);
  if (matching.empty()) return nullptr;
  return matching[static_cast<size_t>(gen.pick(static_cast<int>(matching.size())))];
}

// An equal tree (by an identity of floor division or min/max), usually with another normal form.
NodeRef equivalent(Gen& gen, const NodeRef& root) {
  int64_t c = gen.between(2, 9);
  NodeRef y = gen.expr(1);
  switch (gen.pick(9)) {
    case 0: {  // min(x, y) = x + y - max(x, y)
      if (NodeRef n = pick_node(gen, root, Op::min))
        return replace(root, n.get(),
                       make(Op::sub, make(Op::add, n->a, n->b), make(Op::max, n->a, n->b)));
      break;
    }
    case 1: {  // max(x, y) = -min(-x, -y)
      if (NodeRef n = pick_node(gen, root, Op::max))
        return replace(root, n.get(),
                       make(Op::sub, constant(0),
                            make(Op::min, make(Op::sub, constant(0), n->a),
                                 make(Op::sub, constant(0), n->b))));
      break;
    }
    case 2: {  // floordiv(x, d) = floordiv(x + d * y, d) - y
      if (NodeRef n = pick_node(gen, root, Op::floordiv))
        return replace(
            root, n.get(),
            make(Op::sub, make(Op::floordiv, make(Op::add, n->a, make(Op::mul, n->b, y)), n->b),
                 y));
      break;
    }
    case 3: {  // mod(x, d) = mod(x + d * y, d)
      if (NodeRef n = pick_node(gen, root, Op::mod))
        return replace(root, n.get(),
                       make(Op::mod, make(Op::add, n->a, make(Op::mul, n->b, y)), n->b));
      break;
    }
    case 4: {  // floordiv(x, d) = floordiv(x - mod(x, d), d)
      if (NodeRef n = pick_node(gen, root, Op::floordiv))
        return replace(root, n.get(),
                       make(Op::floordiv, make(Op::sub, n->a, make(Op::mod, n->a, n->b)), n->b));
      break;
    }
    case 5: {  // x = max(x, y) + min(x, y) - y
      NodeRef n = pick_node(gen, root);
      return replace(root, n.get(),
                     make(Op::sub, make(Op::add, make(Op::max, n, y), make(Op::min, n, y)), y));
    }
    case 6: {  // x = max(x, min(x, y))
      NodeRef n = pick_node(gen, root);
      return replace(root, n.get(), make(Op::max, n, make(Op::min, n, y)));
    }
    case 7: {  // mod(x, c1 * c2) = mod(x, c1) + c1 * mod(floordiv(x, c1), c2)
      NodeRef n = pick_node(gen, root);
      int64_t c2 = gen.between(2, 5);
      NodeRef lhs = make(Op::mod, n, constant(c * c2));
      NodeRef rhs = make(Op::add, make(Op::mod, n, constant(c)),
                         make(Op::mul, constant(c),
                              make(Op::mod, make(Op::floordiv, n, constant(c)), constant(c2))));
      // Inserted as x - lhs + rhs, which equals x.
      return replace(root, n.get(), make(Op::add, make(Op::sub, n, lhs), rhs));
    }
    default:
      break;
  }
  // x = c * floordiv(x, c) + mod(x, c)
  NodeRef n = pick_node(gen, root);
  return replace(root, n.get(),
                 make(Op::add, make(Op::mul, constant(c), make(Op::floordiv, n, constant(c))),
                      make(Op::mod, n, constant(c))));
}

// A tree that usually differs from `root` somewhere (but may happen to be equal).
NodeRef mutated(Gen& gen, const NodeRef& root) {
  switch (gen.pick(5)) {
    case 0:
      if (NodeRef n = pick_node(gen, root, Op::constant))
        return replace(root, n.get(), constant(n->value + (gen.pick(2) ? 1 : -1)));
      break;
    case 1:
      if (NodeRef n = pick_node(gen, root, Op::min))
        return replace(root, n.get(), make(Op::max, n->a, n->b));
      break;
    case 2:
      if (NodeRef n = pick_node(gen, root, Op::floordiv))
        return replace(root, n.get(), make(Op::mod, n->a, n->b));
      break;
    case 3:
      if (NodeRef n = pick_node(gen, root, Op::var))
        return replace(root, n.get(), variable(gen.pick(kVarCount)));
      break;
    default:
      break;
  }
  NodeRef n = pick_node(gen, root);
  return replace(root, n.get(), make(Op::add, n, constant(gen.pick(2) ? 1 : 0)));
}

struct PairStats {
  std::map<std::tuple<SymRel, SymTruth, SymMethod>, int> outcomes;
  int sampled_differences = 0;

  int count(SymRel rel, SymTruth truth, SymMethod method) const {
    auto it = outcomes.find({rel, truth, method});
    return it == outcomes.end() ? 0 : it->second;
  }
  int count(SymTruth truth, SymMethod method) const {
    return count(SymRel::eq, truth, method) + count(SymRel::le, truth, method) +
           count(SymRel::lt, truth, method);
  }
};

// Checks one claim against the trees at sampled points and at the counterexample.
void check_claim(Gen& gen, SymProver& prover, SymRel rel, const Node& a, const Node& b,
                 const SymExpr& na, const SymExpr& nb, PairStats& stats) {
  SymCondition claim{rel, na, nb};
  SymProof proof = prover.prove(claim);
  ++stats.outcomes[{rel, proof.truth, proof.method}];
  auto violated = [&](Int x, Int y) {
    return rel == SymRel::eq ? x != y : (rel == SymRel::le ? x > y : x >= y);
  };
  for (int p = 0; p < 12; ++p) {
    SymBinding at = gen.point();
    auto x = truth(a, at), y = truth(b, at);
    if (!x || !y || !violated(*x, *y)) continue;
    ++stats.sampled_differences;
    ASSERT_NE(proof.truth, SymTruth::proven_true)
        << "false proof: " << claim.str() << " (" << sym_method_name(proof.method) << "), but at "
        << binding_str(at) << ": " << static_cast<int64_t>(*x) << " vs " << static_cast<int64_t>(*y)
        << "\n  trees: " << text(a) << "\n         " << text(b);
  }
  if (proof.truth == SymTruth::proven_false) {
    ASSERT_TRUE(proof.counterexample) << claim.str();
    const SymBinding& cex = *proof.counterexample;
    // Within bounds, defined, and violating, both for the normal forms and for the trees.
    ASSERT_FALSE(claim.holds(cex)) << claim.str() << " at " << binding_str(cex);
    SymBinding full = cex;
    for (int i = 0; i < kVarCount; ++i) full.emplace(kVarNames[i], var_of(i).lo());
    auto x = truth(a, full), y = truth(b, full);
    if (x && y) {
      ASSERT_TRUE(violated(*x, *y)) << claim.str() << " at " << binding_str(cex);
    }
  } else {
    ASSERT_FALSE(proof.counterexample);
  }
}

TEST(SymProperty, NoFalseProofs) {
  Gen gen(31337);
  SymProverOptions options;
  options.z3.rlimit = 50000;  // keeps the test quick; unknown answers are allowed
  SymProver prover(options);
  PairStats equal_pairs, other_pairs;
  const int kPairs = 600;
  int pairs = 0;
  for (int i = 0; i < kPairs; ++i) {
    auto s = sample(gen, 3);
    if (!s) continue;
    int kind = i % 3;
    NodeRef other =
        kind == 0 ? equivalent(gen, s->tree) : (kind == 1 ? mutated(gen, s->tree) : gen.expr(3));
    SymExpr nb;
    try {
      nb = build(*other);
    } catch (const UserError&) {
      continue;
    }
    ++pairs;
    PairStats& stats = kind == 0 ? equal_pairs : other_pairs;
    ASSERT_NO_FATAL_FAILURE(
        check_claim(gen, prover, SymRel::eq, *s->tree, *other, s->nf, nb, stats));
    ASSERT_NO_FATAL_FAILURE(
        check_claim(gen, prover, SymRel::le, *s->tree, *other, s->nf, nb, stats));
    ASSERT_NO_FATAL_FAILURE(
        check_claim(gen, prover, SymRel::lt, *other, *s->tree, nb, s->nf, stats));
  }
  EXPECT_GE(pairs, kPairs * 9 / 10);
  // Not trivial: equalities whose normal forms differ are proven (by Z3 in particular), each
  // method proves and disproves claims, and the other pairs are mostly told apart.
  const SymTruth yes = SymTruth::proven_true, no = SymTruth::proven_false;
  EXPECT_GE(equal_pairs.count(SymRel::eq, yes, SymMethod::normal_form), kPairs / 10);
  EXPECT_GE(equal_pairs.count(SymRel::eq, yes, SymMethod::z3), kPairs / 30);
  EXPECT_GE(
      equal_pairs.count(yes, SymMethod::interval) + other_pairs.count(yes, SymMethod::interval),
      kPairs / 30);
  EXPECT_GE(other_pairs.count(yes, SymMethod::z3), kPairs / 100);
  EXPECT_GE(other_pairs.count(no, SymMethod::sampling), kPairs / 3);
  EXPECT_GE(other_pairs.count(no, SymMethod::normal_form), kPairs / 30);
  EXPECT_GE(other_pairs.count(no, SymMethod::interval), kPairs / 30);
  EXPECT_GE(other_pairs.count(no, SymMethod::z3), kPairs / 100);
  EXPECT_GE(other_pairs.sampled_differences, kPairs);
  // Unknown stays the exception.
  EXPECT_LE(equal_pairs.count(SymTruth::unknown, SymMethod::none) +
                other_pairs.count(SymTruth::unknown, SymMethod::none),
            kPairs / 10);
  for (const PairStats* st : {&equal_pairs, &other_pairs})
    for (const auto& [key, n] : st->outcomes)
      std::printf("%s pairs, %s: %s by %s: %d\n", st == &equal_pairs ? "equal" : "other",
                  sym_rel_symbol(std::get<0>(key)), sym_truth_name(std::get<1>(key)),
                  sym_method_name(std::get<2>(key)), n);
  SymProverStats st = prover.stats();
  std::printf("z3 calls %lld, cache hits %lld\n", static_cast<long long>(st.z3_calls),
              static_cast<long long>(st.z3_cache_hits));
}

}  // namespace
}  // namespace weft
