// Property test: random Lax expressions rewritten by sound identities are accepted; perturbed
// ones are rejected (ground truth for perturbations: the f64 evaluation).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <memory>
#include <random>
#include <string>

#include "ir/parser.h"
#include "tests/tiers.h"
#include "verify/equivalence.h"

WEFT_TEST_TIERS("property");

namespace weft {
namespace {

// Expression over inputs X0..X3 of shape [4, 4]. Denominators are 1 + square (never near zero in
// floating point), over a full tensor or a per-row scalar [4, 1].
struct Node {
  enum Kind { input, add, sub, mul, div, matmul, exp, scale } kind = input;
  int index = 0;     // input
  bool row = false;  // div: the divisor is a per-row scalar (sum over dim 1 of b)
  std::shared_ptr<Node> a, b;
};
using P = std::shared_ptr<Node>;

P make(Node::Kind k, P a = nullptr, P b = nullptr, bool row = false) {
  auto n = std::make_shared<Node>();
  n->kind = k;
  n->a = std::move(a);
  n->b = std::move(b);
  n->row = row;
  return n;
}
P leaf(int i) {
  auto n = make(Node::input);
  n->index = i;
  return n;
}
P clone(const P& n) {
  if (!n) return nullptr;
  auto c = std::make_shared<Node>(*n);
  c->a = clone(n->a);
  c->b = clone(n->b);
  return c;
}
bool has_exp(const P& n) {
  return n && (n->kind == Node::exp || has_exp(n->a) || has_exp(n->b));
}

P random_expr(std::mt19937_64& rng, int depth) {
  if (depth == 0 || rng() % 4 == 0) return leaf(static_cast<int>(rng() % 4));
  auto k = static_cast<Node::Kind>(1 + rng() % 7);
  P a = random_expr(rng, depth - 1);
  if (k == Node::exp) {
    if (has_exp(a)) return a;
    return make(k, a);
  }
  if (k == Node::scale) return make(k, a);
  P b = random_expr(rng, depth - 1);
  if ((k == Node::div || k == Node::matmul) && has_exp(b)) b = leaf(static_cast<int>(rng() % 4));
  return make(k, a, b, k == Node::div && rng() % 2 == 0);
}

// Renders a program; returns the value name of `n`.
struct Printer {
  std::string text;
  int next = 0;
  std::string emit(const std::string& rhs) {
    std::string name = fmt::format("t{}", next++);
    text += fmt::format("{} = {}\n", name, rhs);
    return name;
  }
  std::string go(const P& n) {
    switch (n->kind) {
      case Node::input:
        return fmt::format("X{}", n->index);
      case Node::add:
        return emit(fmt::format("add({}, {})", go(n->a), go(n->b)));
      case Node::sub:
        return emit(fmt::format("sub({}, {})", go(n->a), go(n->b)));
      case Node::mul:
        return emit(fmt::format("mul({}, {})", go(n->a), go(n->b)));
      case Node::matmul:
        return emit(fmt::format("matmul({}, {})", go(n->a), go(n->b)));
      case Node::exp:
        return emit(fmt::format("exp(scale({}, factor=1/4))", go(n->a)));
      case Node::scale:
        return emit(fmt::format("scale({}, factor=3/2)", go(n->a)));
      case Node::div: {
        std::string a = go(n->a), b = go(n->b);
        std::string d = n->row ? emit(fmt::format("sum({}, dim=1)", b)) : b;
        d = emit(fmt::format("shift(sqr({}), offset=1)", d));
        return emit(fmt::format("div({}, {})", a, d));
      }
    }
    return "";
  }
};

std::string program(const P& n) {
  Printer p;
  std::string out = p.go(n);
  std::string head;
  for (int i = 0; i < 4; ++i) head += fmt::format("input X{}: f32[4, 4]\n", i);
  if (n->kind == Node::input) out = p.emit(fmt::format("scale({}, factor=1)", out));
  return head + p.text + "output " + out + "\n";
}

// One sound rewrite at some node (depth-first, the first applicable after a random skip).
bool rewrite(P& n, std::mt19937_64& rng, int& skip) {
  if (!n || n->kind == Node::input) return false;
  if (rewrite(n->a, rng, skip) || rewrite(n->b, rng, skip)) return true;
  if (skip-- > 0) return false;
  const P a = n->a, b = n->b;
  switch (n->kind) {
    case Node::add:
      if (a->kind == Node::add) {  // (x + y) + z -> x + (y + z)
        n = make(Node::add, a->a, make(Node::add, a->b, b));
      } else {
        n = make(Node::add, b, a);
      }
      return true;
    case Node::mul:
      if (a->kind == Node::add || a->kind == Node::sub) {  // (x ± y) z -> xz ± yz
        n = make(a->kind, make(Node::mul, a->a, b), make(Node::mul, a->b, clone(b)));
      } else {
        n = make(Node::mul, b, a);
      }
      return true;
    case Node::div:
      if (a->kind == Node::add || a->kind == Node::sub) {  // (x ± y) / d -> x/d ± y/d
        n = make(a->kind, make(Node::div, a->a, b, n->row),
                 make(Node::div, a->b, clone(b), n->row));
        return true;
      }
      if (a->kind == Node::matmul && n->row) {  // (A B) / s -> (A / s) B for a per-row s
        n = make(Node::matmul, make(Node::div, a->a, b, true), a->b);
        return true;
      }
      return false;
    case Node::exp:
      if (a->kind == Node::add) {  // exp(x + y) -> exp(x) exp(y)
        n = make(Node::mul, make(Node::exp, a->a), make(Node::exp, a->b));
        return true;
      }
      return false;
    case Node::scale:
      if (a->kind == Node::add) {  // c (x + y) -> c x + c y
        n = make(Node::add, make(Node::scale, a->a), make(Node::scale, a->b));
        return true;
      }
      return false;
    case Node::matmul:
      if (a->kind == Node::add) {  // (A + B) C -> A C + B C
        n = make(Node::add, make(Node::matmul, a->a, b), make(Node::matmul, a->b, clone(b)));
        return true;
      }
      return false;
    case Node::input:
    case Node::sub:
      return false;
  }
  return false;
}

// A random local change: another operator kind, a swapped operand order or another input.
void perturb(P& n, std::mt19937_64& rng) {
  std::vector<Node*> nodes;
  std::function<void(Node*)> collect = [&](Node* x) {
    if (!x) return;
    nodes.push_back(x);
    collect(x->a.get());
    collect(x->b.get());
  };
  collect(n.get());
  Node* x = nodes[rng() % nodes.size()];
  switch (x->kind) {
    case Node::input:
      x->index = (x->index + 1 + static_cast<int>(rng() % 3)) % 4;
      break;
    case Node::add:
      x->kind = Node::sub;
      break;
    case Node::sub:
      std::swap(x->a, x->b);
      break;
    case Node::mul:
      x->kind = Node::add;
      break;
    case Node::matmul:
      std::swap(x->a, x->b);
      break;
    case Node::div:
      x->row = !x->row;
      break;
    case Node::exp:
      x->kind = Node::scale;
      break;
    case Node::scale:
      x->kind = Node::exp;
      if (has_exp(x->a)) x->kind = Node::input;
      break;
  }
}

TEST(VerifyProperty, SoundRewritesAreAcceptedAndPerturbationsRejected) {
  std::mt19937_64 rng(2024);
  int accepted = 0, rejected = 0, perturbed_equal = 0, rewrites = 0;
  VerifyOptions fast;
  fast.float_check = false;
  for (int trial = 0; trial < 60; ++trial) {
    P e = random_expr(rng, 4);
    const Graph a = parse_graph(program(e), "<a>");
    P r = clone(e);
    for (int k = 0; k < 3; ++k) {
      int skip = static_cast<int>(rng() % 6);
      rewrites += rewrite(r, rng, skip);
    }
    const Graph b = parse_graph(program(r), "<rewritten>");
    VerifyResult ok = verify_equivalent(a, b, fast);
    ASSERT_EQ(ok.verdict, Verdict::equivalent) << program(e) << "---\n" << program(r);
    ++accepted;

    P w = clone(e);
    perturb(w, rng);
    const Graph c = parse_graph(program(w), "<perturbed>");
    // Ground truth from f64: a perturbation may happen to be an identity (e.g. x - x swapped).
    const FloatCheck truth = float_check(a, c, 99);
    VerifyResult bad = verify_equivalent(a, c, fast);
    if (truth.equal_in_f64) {
      ++perturbed_equal;
      EXPECT_EQ(bad.verdict, Verdict::equivalent) << program(e) << "---\n" << program(w);
    } else {
      // A perturbation may also leave the Lax fragment (exp over exp): refused, so rejected.
      EXPECT_TRUE(bad.verdict == Verdict::not_equivalent || bad.verdict == Verdict::outside_lax)
          << program(e) << "---\n"
          << program(w);
      ++rejected;
    }
  }
  std::printf(
      "property: %d rewritten accepted (%d rewrites applied), %d perturbed rejected, %d "
      "perturbations were identities\n",
      accepted, rewrites, rejected, perturbed_equal);
  EXPECT_GT(rewrites, 60);
  EXPECT_GT(rejected, 40);
}

}  // namespace
}  // namespace weft
