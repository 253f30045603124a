// Cross-check of the pruning oracle against an independent encoding of the same axioms: an
// exhaustive rewriting search over explicit term trees (its own rule code, unrestricted integer
// reduction sizes), run on small targets whose equivalence classes are finite.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "absexpr/oracle.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

// An immutable term tree with its printed form (the same s-expressions as TermStore::str).
struct Tree;
using TreeP = std::shared_ptr<const Tree>;
struct Tree {
  std::string op;  // "add", "sum", ..., "const", or a variable name when kids are empty
  int64_t k = 0;
  std::vector<TreeP> kids;
  std::string text;
};

bool is_leaf_op(const std::string& op) {
  return op == "const";
}

TreeP mk(std::string op, std::vector<TreeP> kids, int64_t k = 0) {
  auto t = std::make_shared<Tree>();
  t->op = std::move(op);
  t->k = k;
  t->kids = std::move(kids);
  if (t->kids.empty()) {
    t->text = is_leaf_op(t->op) ? "(const)" : t->op;
  } else {
    t->text = "(" + t->op;
    if (t->op == "sum" || t->op == "max") t->text += " " + std::to_string(t->k);
    for (const TreeP& c : t->kids) t->text += " " + c->text;
    t->text += ")";
  }
  return t;
}
TreeP bin(const char* op, TreeP a, TreeP b) {
  return mk(op, {std::move(a), std::move(b)});
}
TreeP red(const std::string& op, int64_t k, TreeP a) {
  return mk(op, {std::move(a)}, k);
}
bool is(const TreeP& t, const char* op) {
  return t->op == op && !t->kids.empty();
}
bool same(const TreeP& a, const TreeP& b) {
  return a->text == b->text;
}

// All results of applying one A_eq rule, in either direction, at the root of `t`.
std::vector<TreeP> root_rewrites(const TreeP& t) {
  std::vector<TreeP> out;
  const auto& c = t->kids;
  for (const char* op : {"add", "mul"}) {
    if (!is(t, op)) continue;
    out.push_back(bin(op, c[1], c[0]));  // comm
    if (is(c[0], op)) out.push_back(bin(op, c[0]->kids[0], bin(op, c[0]->kids[1], c[1])));
    if (is(c[1], op)) out.push_back(bin(op, bin(op, c[0], c[1]->kids[0]), c[1]->kids[1]));
  }
  if (is(t, "mul")) {
    if (is(c[1], "add"))  // x(y+z) -> xy + xz
      out.push_back(bin("add", bin("mul", c[0], c[1]->kids[0]), bin("mul", c[0], c[1]->kids[1])));
    if (is(c[1], "div"))  // x(y/z) -> (xy)/z
      out.push_back(bin("div", bin("mul", c[0], c[1]->kids[0]), c[1]->kids[1]));
    if (is(c[0], "sum"))  // sum_i(x) y -> sum_i(x y)
      out.push_back(red("sum", c[0]->k, bin("mul", c[0]->kids[0], c[1])));
  }
  if (is(t, "add")) {
    if (is(c[0], "mul") && is(c[1], "mul") && same(c[0]->kids[0], c[1]->kids[0]))
      out.push_back(bin("mul", c[0]->kids[0], bin("add", c[0]->kids[1], c[1]->kids[1])));
    if (is(c[0], "div") && is(c[1], "div") && same(c[0]->kids[1], c[1]->kids[1]))
      out.push_back(bin("div", bin("add", c[0]->kids[0], c[1]->kids[0]), c[0]->kids[1]));
    if (is(c[0], "sum") && is(c[1], "sum") && c[0]->k == c[1]->k)
      out.push_back(red("sum", c[0]->k, bin("add", c[0]->kids[0], c[1]->kids[0])));
  }
  if (is(t, "div")) {
    if (is(c[0], "add"))  // (x+y)/z -> x/z + y/z
      out.push_back(bin("add", bin("div", c[0]->kids[0], c[1]), bin("div", c[0]->kids[1], c[1])));
    if (is(c[0], "mul"))  // (xy)/z -> x(y/z)
      out.push_back(bin("mul", c[0]->kids[0], bin("div", c[0]->kids[1], c[1])));
    if (is(c[0], "div"))  // (x/y)/z -> x/(yz)
      out.push_back(bin("div", c[0]->kids[0], bin("mul", c[0]->kids[1], c[1])));
    if (is(c[1], "mul"))  // x/(yz) -> (x/y)/z
      out.push_back(bin("div", bin("div", c[0], c[1]->kids[0]), c[1]->kids[1]));
    if (is(c[0], "sum"))  // sum_i(x)/y -> sum_i(x/y)
      out.push_back(red("sum", c[0]->k, bin("div", c[0]->kids[0], c[1])));
  }
  for (const char* op : {"sum", "max"}) {
    if (!is(t, op)) continue;
    const TreeP& x = c[0];
    if (is(x, op)) out.push_back(red(op, t->k * x->k, x->kids[0]));  // merge, any product
    for (int64_t i = 2; i < t->k; ++i)                               // split, any factorization
      if (t->k % i == 0) out.push_back(red(op, i, red(op, t->k / i, x)));
  }
  if (is(t, "sum")) {
    const TreeP& x = c[0];
    int64_t i = t->k;
    if (is(x, "add"))
      out.push_back(bin("add", red("sum", i, x->kids[0]), red("sum", i, x->kids[1])));
    if (is(x, "mul")) out.push_back(bin("mul", red("sum", i, x->kids[0]), x->kids[1]));
    if (is(x, "div")) out.push_back(bin("div", red("sum", i, x->kids[0]), x->kids[1]));
  }
  return out;
}

// One-step rewrites anywhere in `t`.
void all_rewrites(const TreeP& t, std::vector<TreeP>& out) {
  for (TreeP& r : root_rewrites(t)) out.push_back(std::move(r));
  for (size_t i = 0; i < t->kids.size(); ++i) {
    std::vector<TreeP> sub;
    all_rewrites(t->kids[i], sub);
    for (TreeP& s : sub) {
      std::vector<TreeP> kids = t->kids;
      kids[i] = std::move(s);
      out.push_back(mk(t->op, std::move(kids), t->k));
    }
  }
}

void subterms(const TreeP& t, std::vector<TreeP>& out) {
  out.push_back(t);
  for (const TreeP& c : t->kids) subterms(c, out);
}

struct Closure {
  std::vector<TreeP> members;             // every term equivalent to the target
  std::unordered_set<std::string> equal;  // their texts
  std::unordered_set<std::string> sub;    // texts of all their subterms
  std::vector<TreeP> sub_trees;
};

Closure close(const TreeP& target, size_t cap) {
  Closure cl;
  cl.members.push_back(target);
  cl.equal.insert(target->text);
  for (size_t i = 0; i < cl.members.size(); ++i) {
    std::vector<TreeP> next;
    all_rewrites(cl.members[i], next);
    for (TreeP& n : next) {
      if (cl.equal.insert(n->text).second) cl.members.push_back(std::move(n));
    }
    if (cl.members.size() > cap) break;
  }
  for (const TreeP& m : cl.members) {
    std::vector<TreeP> subs;
    subterms(m, subs);
    for (TreeP& s : subs)
      if (cl.sub.insert(s->text).second) cl.sub_trees.push_back(std::move(s));
  }
  return cl;
}

// A random variation of `t`: replace a subterm by a leaf, change a size, wrap, or swap an op.
TreeP mutate(std::mt19937& rng, const TreeP& t, const std::vector<TreeP>& leaves) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  if (!t->kids.empty() && pick(3) != 0) {
    std::vector<TreeP> kids = t->kids;
    size_t i = pick(kids.size());
    kids[i] = mutate(rng, kids[i], leaves);
    return mk(t->op, std::move(kids), t->k);
  }
  switch (pick(6)) {
    case 0:
      return leaves[pick(leaves.size())];
    case 1:
      return red("sum", static_cast<int64_t>(2 + pick(7)), t);
    case 2:
      return bin("mul", t, leaves[pick(leaves.size())]);
    case 3:
      return bin("add", leaves[pick(leaves.size())], t);
    case 4:
      return mk("exp", {t});
    default:
      if (t->kids.size() == 2) return bin(pick(2) ? "div" : "add", t->kids[1], t->kids[0]);
      if (t->op == "sum") return red("sum", t->k < 4 ? t->k * 2 : t->k / 2, t->kids[0]);
      return mk("sqrt", {t});
  }
}

struct Case {
  const char* target;
  int samples;
};

TEST(AbsexprCrossCheck, OracleAgreesWithExhaustiveRewriting) {
  // Small versions of the examples' shapes (RMSNorm+Linear, gated MLP, attention) and a few
  // exercising the remaining rules; sizes are small so the rewriting closure stays finite.
  const Case cases[] = {
      {"(sum 4 (mul (div X (sqrt (add (sum 4 (mul X X)) (const)))) W))", 200},
      {"(mul (silu (sum 4 (mul X A))) (sum 2 (mul X B)))", 150},
      {"(sum 4 (mul (div (exp (sum 2 (mul Q K))) (sum 4 (exp (sum 2 (mul Q K))))) V))", 200},
      {"(add (div X Z) (mul Y (add X Z)))", 100},
      {"(max 4 (div (sum 6 X) (mul Y Z)))", 100},
  };
  std::mt19937 rng(2024);
  int checked = 0, positives = 0, negatives = 0, equivalents = 0;
  for (const Case& c : cases) {
    TermStore store;
    TermId target = store.parse(c.target);
    Oracle oracle(store, target);
    ASSERT_TRUE(oracle.complete()) << c.target;
    // Rebuild the target as a tree from its printed form via a tiny reader.
    std::function<TreeP(const std::string&, size_t&)> read = [&](const std::string& s,
                                                                 size_t& p) -> TreeP {
      while (s[p] == ' ') ++p;
      if (s[p] != '(') {
        size_t b = p;
        while (p < s.size() && s[p] != ' ' && s[p] != ')') ++p;
        return mk(s.substr(b, p - b), {});
      }
      ++p;
      size_t b = p;
      while (s[p] != ' ' && s[p] != ')') ++p;
      std::string op = s.substr(b, p - b);
      if (op == "const") {
        ++p;
        return mk("const", {});
      }
      int64_t k = 0;
      if (op == "sum" || op == "max") {
        ++p;
        size_t e = p;
        while (s[e] != ' ') ++e;
        k = std::stoll(s.substr(p, e - p));
        p = e;
      }
      std::vector<TreeP> kids;
      while (s[p] != ')') kids.push_back(read(s, p));
      ++p;
      return mk(op, std::move(kids), k);
    };
    size_t pos = 0;
    TreeP tree = read(c.target, pos);
    ASSERT_EQ(tree->text, c.target);
    Closure cl = close(tree, 400000);
    ASSERT_LE(cl.members.size(), 400000u) << "closure not exhaustive for " << c.target;
    std::vector<TreeP> leaves;
    for (const TreeP& s : cl.sub_trees)
      if (s->kids.empty()) leaves.push_back(s);
    ASSERT_FALSE(leaves.empty());
    leaves.push_back(mk("U", {}));  // a variable the target does not have
    for (int i = 0; i < c.samples; ++i) {
      TreeP t;
      switch (i % 3) {
        case 0:
          t = cl.sub_trees[rng() % cl.sub_trees.size()];
          break;
        case 1:
          t = cl.members[rng() % cl.members.size()];
          break;
        default:
          t = mutate(rng, cl.sub_trees[rng() % cl.sub_trees.size()], leaves);
          break;
      }
      TermId term = store.parse(t->text);
      ASSERT_EQ(store.str(term), t->text);
      bool want_equal = cl.equal.count(t->text) != 0;
      bool want_viable = cl.sub.count(t->text) != 0;
      PruneVerdict v = oracle.classify(term);
      EXPECT_EQ(v == PruneVerdict::equivalent, want_equal) << t->text << " for " << c.target;
      EXPECT_EQ(v != PruneVerdict::not_viable, want_viable) << t->text << " for " << c.target;
      ++checked;
      positives += want_viable;
      negatives += !want_viable;
      equivalents += want_equal;
    }
    std::printf("[ crosscheck ] %s: %zu equivalent terms, %zu subterms\n", c.target,
                cl.members.size(), cl.sub.size());
  }
  std::printf("[ crosscheck ] %d terms: %d viable (%d equivalent), %d not viable\n", checked,
              positives, equivalents, negatives);
  EXPECT_GE(checked, 500);
  EXPECT_GE(negatives, 100) << "the corpus must contain terms the oracle has to reject";
  EXPECT_GE(positives, 100);
}

}  // namespace
}  // namespace weft
