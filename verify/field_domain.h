// The finite-field value domain: the reference interpreter run over Z_p (and Z_q for exponents).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "interp/domain.h"
#include "verify/field.h"
#include "verify/field_matmul.h"

namespace weft {

// A division by a value ≡ 0 in one of the fields: the test is discarded and drawn again.
class ZeroDivisorError : public std::runtime_error {
 public:
  ZeroDivisorError() : std::runtime_error("zero divisor in a finite-field test") {}
};

// A value that was exponentiated reached exp again: the program is outside the Lax fragment.
class OutsideLaxError : public std::runtime_error {
 public:
  OutsideLaxError() : std::runtime_error("exp applied to a value that was already exponentiated") {}
};

// Residue in Z_p only: used when neither program contains exp, which halves the work.
struct FieldP {
  uint64_t p = 0;
  friend bool operator==(const FieldP&, const FieldP&) = default;
};

static_assert(sizeof(FieldP) == sizeof(uint64_t) && std::is_standard_layout_v<FieldP>);

// Residues in Z_p and Z_q. q == kNoQ marks a value that depends on an exponential, whose Z_q
// image is meaningless (exp is not a homomorphism into Z_q).
struct FieldPQ {
  static constexpr uint64_t kNoQ = ~uint64_t{0};
  uint64_t p = 0;
  uint64_t q = 0;
  friend bool operator==(const FieldPQ&, const FieldPQ&) = default;
};

// Everything one test draws besides the inputs: the element ω of order q (as a fixed-base table,
// exponent byte by byte) and the seed of the uninterpreted functions. Shared by both programs.
struct FieldTestParams {
  uint64_t seed = 0;
  uint64_t omega = 1;
  std::array<std::array<uint64_t, 256>, 7> omega_pow{};  // ω^(b · 256^i)
  int threads = 0;

  // Draws ω uniformly among the elements of order q: squares of random residues other than ±1.
  static std::shared_ptr<const FieldTestParams> draw(uint64_t seed, int threads);
  uint64_t exp(uint64_t e) const {
    const ff::Field& F = ff::field_p();
    uint64_t r = omega_pow[0][e & 255];
    for (int i = 1; i < 7; ++i) r = F.mul(r, omega_pow[i][(e >> (8 * i)) & 255]);
    return r;
  }
};

// Tags that make each uninterpreted operator a different random function.
uint64_t uninterpreted_tag(OpKind kind);

template <class V>
class FieldDomain {
 public:
  using Value = V;
  static constexpr bool kHasQ = std::is_same_v<V, FieldPQ>;

  explicit FieldDomain(std::shared_ptr<const FieldTestParams> params)
      : params_(std::move(params)), constants_(std::make_shared<ConstantCache>()) {}

  Value constant(const Rational& r) const {
    auto it = constants_->find({r.num(), r.den()});
    if (it != constants_->end()) return it->second;
    auto vp = ff::field_p().from_rational(r);
    if (!vp) throw ZeroDivisorError();
    Value v{};
    v.p = *vp;
    if constexpr (kHasQ) {
      auto vq = ff::field_q().from_rational(r);
      if (!vq) throw ZeroDivisorError();
      v.q = *vq;
    }
    constants_->emplace(std::make_pair(r.num(), r.den()), v);
    return v;
  }
  Value add(Value a, Value b) const {
    Value r{};
    r.p = ff::field_p().add(a.p, b.p);
    if constexpr (kHasQ) r.q = both_q(a, b) ? ff::field_q().add(a.q, b.q) : FieldPQ::kNoQ;
    return r;
  }
  Value sub(Value a, Value b) const {
    Value r{};
    r.p = ff::field_p().sub(a.p, b.p);
    if constexpr (kHasQ) r.q = both_q(a, b) ? ff::field_q().sub(a.q, b.q) : FieldPQ::kNoQ;
    return r;
  }
  Value mul(Value a, Value b) const {
    Value r{};
    r.p = ff::field_p().mul(a.p, b.p);
    if constexpr (kHasQ) r.q = both_q(a, b) ? ff::field_q().mul(a.q, b.q) : FieldPQ::kNoQ;
    return r;
  }
  Value div(Value a, Value b) const {
    if (b.p == 0) throw ZeroDivisorError();
    Value r{};
    InverseMemo& memo = *memo_;
    if (b.p != memo.p_of) memo.p_of = b.p, memo.p_inv = ff::field_p().inv(b.p);
    r.p = ff::field_p().mul(a.p, memo.p_inv);
    if constexpr (kHasQ) {
      if (both_q(a, b)) {
        if (b.q == 0) throw ZeroDivisorError();
        if (b.q != memo.q_of) memo.q_of = b.q, memo.q_inv = ff::field_q().inv(b.q);
        r.q = ff::field_q().mul(a.q, memo.q_inv);
      } else {
        r.q = FieldPQ::kNoQ;
      }
    }
    return r;
  }
  // An elementwise operator, resolved once per application: its Lax formula (ir/ops.h) evaluated
  // exactly, with the residues of the constants it reads computed here, or an uninterpreted
  // function of the operand when it has no formula.
  class Elementwise {
   public:
    Elementwise(const FieldDomain& d, OpKind kind, const Attrs& attrs) : d_(d), kind_(kind) {
      const OpInfo& info = op_info(kind);
      if (info.formula.empty()) return;
      formula_ = &info.formula;
      if (const AttrSpec* c = rational_attr(info); c && attrs.has(c->name))
        attribute_ = d.constant(attrs.get_rational(c->name));
      for (const FormulaNode& n : info.formula.nodes)
        if (n.a == FormulaNode::kLiteral || n.b == FormulaNode::kLiteral)
          literals_.emplace_back(n.literal, d.constant(n.literal));
    }
    Value operator()(Value a, Value b) const {
      if (formula_ == nullptr) return d_.uninterpreted(kind_, a);
      Algebra algebra{*this, a, b};
      return evaluate_formula(*formula_, algebra);
    }

   private:
    // A formula's leaves and operations in this domain.
    struct Algebra {
      using Value = V;
      const Elementwise& e;
      Value a, b;
      Value x() const { return a; }
      Value y() const { return b; }
      Value attribute(const char*) const { return e.attribute_; }
      Value literal(const Rational& r) const {
        for (const auto& [value, residue] : e.literals_)
          if (value == r) return residue;
        return e.d_.constant(r);
      }
      Value add(Value l, Value r) const { return e.d_.add(l, r); }
      Value sub(Value l, Value r) const { return e.d_.sub(l, r); }
      Value mul(Value l, Value r) const { return e.d_.mul(l, r); }
      Value div(Value l, Value r) const { return e.d_.div(l, r); }
      Value exp(Value l) const { return e.d_.exp(l); }
    };

    const FieldDomain& d_;
    OpKind kind_;
    const Formula* formula_ = nullptr;
    Value attribute_{};
    std::vector<std::pair<Rational, Value>> literals_;
  };
  Elementwise elementwise(OpKind kind, const Attrs& attrs) const {
    return Elementwise(*this, kind, attrs);
  }
  // exp(x) = ω^x: x's Z_q image is the exponent; the result has no Z_q image of its own.
  Value exp(Value x) const {
    if constexpr (kHasQ) {
      if (x.q == FieldPQ::kNoQ) throw OutsideLaxError();
      return Value{params_->exp(x.q), FieldPQ::kNoQ};
    } else {
      WEFT_CHECK(false, "exp in a field domain without Z_q");
      return x;
    }
  }
  // max under a random total order of Z_p (rank = seeded hash): associative, commutative and
  // idempotent like the real max, so max-of-maxes equals max-of-all, but translation invariance
  // and other order-arithmetic identities are not modelled (they are rejected).
  Value reduce_max(std::span<const Value> group) const {
    WEFT_CHECK(!group.empty(), "max of an empty group");
    const uint64_t tag = ff::mix64(params_->seed, uninterpreted_tag(OpKind::max));
    const Value* best = &group[0];
    uint64_t best_rank = ff::mix64(tag, best->p);
    for (const Value& v : group.subspan(1)) {
      uint64_t rank = ff::mix64(tag, v.p);
      if (rank > best_rank || (rank == best_rank && v.p > best->p)) {
        best = &v;
        best_rank = rank;
      }
    }
    return *best;
  }

  // Tests evaluated in this domain stop (EvaluationAbandoned) at the next matmul or kernel-level
  // op (field_fingerprints) that starts after `at`: the ops that take the time.
  void set_give_up_at(std::chrono::steady_clock::time_point at) { give_up_.at = at; }
  void check_give_up() const { give_up_.check(); }

  void matmul(const Value* A, const Value* B, Value* C, int64_t m, int64_t k, int64_t n) const {
    check_give_up();
    if constexpr (!kHasQ) {
      // FieldP is exactly one residue: the kernel reads and writes the tensors in place.
      ff::matmul_mod(reinterpret_cast<const uint64_t*>(A), reinterpret_cast<const uint64_t*>(B),
                     reinterpret_cast<uint64_t*>(C), m, k, n, ff::kP, params_->threads);
      return;
    }
    std::vector<uint64_t> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)),
        c(static_cast<size_t>(m * n));
    auto run = [&](auto get, uint64_t modulus, auto put) {
      for (int64_t i = 0; i < m * k; ++i) a[i] = get(A[i]);
      for (int64_t i = 0; i < k * n; ++i) b[i] = get(B[i]);
      ff::matmul_mod(a.data(), b.data(), c.data(), m, k, n, modulus, params_->threads);
      for (int64_t i = 0; i < m * n; ++i) put(C[i], c[i]);
    };
    run([](const Value& v) { return v.p; }, ff::kP, [](Value& v, uint64_t x) { v.p = x; });
    if constexpr (kHasQ) {
      // A product involving an exponentiated operand has no Z_q image; elsewhere it is exact.
      std::vector<uint8_t> a_no(static_cast<size_t>(m)), b_no(static_cast<size_t>(n));
      bool any = false;
      for (int64_t i = 0; i < m * k; ++i)
        if (A[i].q == FieldPQ::kNoQ) a_no[i / k] = 1, any = true;
      for (int64_t i = 0; i < k * n; ++i)
        if (B[i].q == FieldPQ::kNoQ) b_no[i % n] = 1, any = true;
      run([](const Value& v) { return v.q == FieldPQ::kNoQ ? uint64_t{0} : v.q; }, ff::kQ,
          [](Value& v, uint64_t x) { v.q = x; });
      if (any)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            if (a_no[i] || b_no[j]) C[i * n + j].q = FieldPQ::kNoQ;
    }
  }

  const FieldTestParams& params() const { return *params_; }

 private:
  using ConstantCache = std::map<std::pair<int64_t, int64_t>, Value>;
  // Broadcast divisions divide many elements by one value: its last inverse is remembered.
  struct InverseMemo {
    uint64_t p_of = 0, p_inv = 0, q_of = 0, q_inv = 0;
  };

  static bool both_q(const Value& a, const Value& b) {
    return a.q != FieldPQ::kNoQ && b.q != FieldPQ::kNoQ;
  }
  // A fresh random function per test and operator kind, of the argument's Z_p residue only, so
  // equal arguments agree whether or not their Z_q images are known.
  Value uninterpreted(OpKind kind, Value x) const {
    const uint64_t h = ff::mix64(params_->seed, uninterpreted_tag(kind), x.p);
    Value r{};
    r.p = ff::field_p().from_bits(h);
    if constexpr (kHasQ) r.q = ff::field_q().from_bits(ff::mix64(h));
    return r;
  }

  std::shared_ptr<const FieldTestParams> params_;
  // Scale factors are applied per element: their residues (one inversion each) are memoized.
  // A domain object serves one evaluation thread.
  std::shared_ptr<ConstantCache> constants_;
  GiveUpAt give_up_;
  std::shared_ptr<InverseMemo> memo_ = std::make_shared<InverseMemo>();
};

static_assert(HasMatmul<FieldDomain<FieldP>> && HasMatmul<FieldDomain<FieldPQ>>);

}  // namespace weft
