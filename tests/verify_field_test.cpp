// Unit tests of the verifier's field arithmetic, field matmul kernels and finite-field domain.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "tests/tiers.h"
#include "verify/field.h"
#include "verify/field_domain.h"
#include "verify/field_matmul.h"

WEFT_TEST_TIERS("unit");
WEFT_TEST_TIERS_OF("FieldMatmul.*", "tsan");

namespace weft {
namespace {

using u128 = unsigned __int128;

TEST(Field, PrimesHaveTheRequiredShape) {
  EXPECT_TRUE(ff::is_prime(ff::kP));
  EXPECT_TRUE(ff::is_prime(ff::kQ));
  EXPECT_EQ((ff::kP - 1) % ff::kQ, 0u);
  EXPECT_GE(ff::kQ, uint64_t{1} << 31);
  EXPECT_LT(ff::kP, uint64_t{1} << 52);
  EXPECT_FALSE(ff::is_prime(ff::kQ * 3));
  EXPECT_FALSE(ff::is_prime(561));  // Carmichael
}

TEST(Field, MulMatches128BitReference) {
  std::mt19937_64 rng(7);
  for (const ff::Field* F : {&ff::field_p(), &ff::field_q()}) {
    const uint64_t m = F->modulus();
    std::vector<uint64_t> edge = {0, 1, 2, m - 1, m - 2, m / 2, m / 2 + 1};
    for (int i = 0; i < 20000; ++i) {
      uint64_t a = i < 49 ? edge[i % 7] : rng() % m;
      uint64_t b = i < 49 ? edge[i / 7] : rng() % m;
      ASSERT_EQ(F->mul(a, b), static_cast<uint64_t>(static_cast<u128>(a) * b % m)) << a << " " << b;
      ASSERT_LT(F->add(a, b), m);
      ASSERT_EQ(F->add(F->sub(a, b), b), a);
    }
  }
}

TEST(Field, InverseAndRationals) {
  const ff::Field& F = ff::field_p();
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    uint64_t a = 1 + rng() % (ff::kP - 1);
    ASSERT_EQ(F.mul(a, F.inv(a)), 1u);
  }
  // 1/4096 * 4096 = 1; -3/8 * 8 = -3.
  EXPECT_EQ(F.mul(*F.from_rational(*Rational::make(1, 4096)), 4096), 1u);
  EXPECT_EQ(F.mul(*F.from_rational(*Rational::make(-3, 8)), 8), ff::kP - 3);
  EXPECT_EQ(F.pow(3, ff::kP - 1), 1u);  // Fermat
}

TEST(Field, OmegaHasOrderQAndTheExpTableIsExact) {
  std::set<uint64_t> omegas;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    auto t = FieldTestParams::draw(seed, 1);
    const ff::Field& F = ff::field_p();
    EXPECT_NE(t->omega, 1u);
    EXPECT_EQ(F.pow(t->omega, ff::kQ), 1u);
    omegas.insert(t->omega);
    std::mt19937_64 rng(seed);
    for (uint64_t e : {uint64_t{0}, uint64_t{1}, uint64_t{255}, uint64_t{256}, ff::kQ - 1,
                       rng() % ff::kQ, rng() % ff::kQ})
      EXPECT_EQ(t->exp(e), F.pow(t->omega, e)) << e;
  }
  EXPECT_EQ(omegas.size(), 5u) << "each test must draw a fresh omega";
}

void naive_matmul(const std::vector<uint64_t>& A, const std::vector<uint64_t>& B,
                  std::vector<uint64_t>& C, int64_t m, int64_t k, int64_t n, uint64_t mod) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      uint64_t s = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        s = static_cast<uint64_t>((static_cast<u128>(A[i * k + kk]) * B[kk * n + j] + s) % mod);
      C[i * n + j] = s;
    }
}

TEST(FieldMatmul, BothKernelsMatchTheNaiveProduct) {
  std::mt19937_64 rng(11);
  struct Case {
    int64_t m, k, n;
  };
  for (Case c : {Case{1, 1, 1}, Case{3, 5, 7}, Case{4, 16, 16}, Case{9, 33, 40}, Case{16, 4100, 20},
                 Case{70, 300, 290}}) {
    for (uint64_t mod : {ff::kP, ff::kQ}) {
      std::vector<uint64_t> A(c.m * c.k), B(c.k * c.n), want(c.m * c.n), got(c.m * c.n);
      for (auto& v : A) v = rng() % mod;
      for (auto& v : B) v = rng() % mod;
      if (c.m == 3) std::fill(A.begin(), A.end(), mod - 1);  // largest residues
      naive_matmul(A, B, want, c.m, c.k, c.n, mod);
      for (bool scalar : {false, true}) {
        ff::set_force_scalar_matmul(scalar);
        for (int threads : {1, 2}) {
          std::fill(got.begin(), got.end(), 12345);
          ff::matmul_mod(A.data(), B.data(), got.data(), c.m, c.k, c.n, mod, threads);
          ASSERT_EQ(got, want) << c.m << "x" << c.k << "x" << c.n << " scalar=" << scalar
                               << " kernel=" << ff::matmul_kernel_name();
        }
      }
      ff::set_force_scalar_matmul(false);
    }
  }
}

TEST(FieldDomain, UninterpretedFunctionsAreSeededAndDistinctPerKind) {
  FieldDomain<FieldPQ> d1(FieldTestParams::draw(1, 1)), d2(FieldTestParams::draw(2, 1));
  FieldPQ x{12345, 678};
  Attrs none;
  EXPECT_EQ(d1.elementwise(OpKind::sqrt, none)(x, {}), d1.elementwise(OpKind::sqrt, none)(x, {}));
  EXPECT_NE(d1.elementwise(OpKind::sqrt, none)(x, {}), d2.elementwise(OpKind::sqrt, none)(x, {}));
  EXPECT_NE(d1.elementwise(OpKind::sqrt, none)(x, {}), d1.elementwise(OpKind::silu, none)(x, {}));
  EXPECT_NE(d1.elementwise(OpKind::gelu, none)(x, {}), d1.elementwise(OpKind::relu, none)(x, {}));
  EXPECT_NE(d1.elementwise(OpKind::sqrt, none)(x, {}),
            d1.elementwise(OpKind::sqrt, none)(FieldPQ{12346, 678}, {}));
  // A function of the value, not of its exponent-side residue.
  EXPECT_EQ(d1.elementwise(OpKind::sqrt, none)(x, {}),
            d1.elementwise(OpKind::sqrt, none)(FieldPQ{12345, 1}, {}));
  // Outputs are fresh residues in range.
  FieldPQ y = d1.elementwise(OpKind::silu, none)(x, {});
  EXPECT_LT(y.p, ff::kP);
  EXPECT_LT(y.q, ff::kQ);
}

TEST(FieldDomain, MaxIsAMaxUnderARandomOrder) {
  FieldDomain<FieldP> d(FieldTestParams::draw(5, 1));
  std::vector<FieldP> all;
  for (uint64_t i = 1; i <= 12; ++i) all.push_back(FieldP{i * 1000003});
  FieldP whole = d.reduce_max(all);
  // One of the members, and max of maxes of any split equals the max of all.
  EXPECT_NE(std::find(all.begin(), all.end(), whole), all.end());
  for (size_t cut = 1; cut < all.size(); ++cut) {
    FieldP left = d.reduce_max(std::span(all).subspan(0, cut));
    FieldP right = d.reduce_max(std::span(all).subspan(cut));
    std::vector<FieldP> two = {right, left};
    EXPECT_EQ(d.reduce_max(two), whole);
  }
  std::vector<FieldP> reversed(all.rbegin(), all.rend());
  EXPECT_EQ(d.reduce_max(reversed), whole);
  // A different test orders the residues differently at least sometimes.
  int differs = 0;
  for (uint64_t s = 10; s < 20; ++s)
    differs += FieldDomain<FieldP>(FieldTestParams::draw(s, 1)).reduce_max(all) != whole;
  EXPECT_GT(differs, 0);
}

TEST(FieldDomain, ExpOfAnExponentiatedValueIsOutsideLax) {
  FieldDomain<FieldPQ> d(FieldTestParams::draw(9, 1));
  Attrs none;
  FieldPQ x{5, 7};
  FieldPQ e = d.elementwise(OpKind::exp, none)(x, {});
  EXPECT_EQ(e.q, FieldPQ::kNoQ);
  EXPECT_EQ(e.p, d.params().exp(7));
  FieldPQ s = d.add(e, x);
  EXPECT_EQ(s.q, FieldPQ::kNoQ);
  EXPECT_THROW(d.elementwise(OpKind::exp, none)(s, {}), OutsideLaxError);
  // An uninterpreted function's result is a fresh variable and may be exponentiated.
  EXPECT_NO_THROW(d.elementwise(OpKind::exp, none)(d.elementwise(OpKind::sqrt, none)(s, {}), {}));
  // exp(a + b) = exp(a) * exp(b).
  FieldPQ a{11, 100}, b{13, 200};
  EXPECT_EQ(
      d.elementwise(OpKind::exp, none)(d.add(a, b), {}).p,
      d.mul(d.elementwise(OpKind::exp, none)(a, {}), d.elementwise(OpKind::exp, none)(b, {})).p);
}

TEST(FieldDomain, ZeroDivisorsAreReported) {
  FieldDomain<FieldPQ> d(FieldTestParams::draw(1, 1));
  EXPECT_THROW(d.div(FieldPQ{1, 1}, FieldPQ{0, 3}), ZeroDivisorError);
  EXPECT_THROW(d.div(FieldPQ{1, 1}, FieldPQ{3, 0}), ZeroDivisorError);
  EXPECT_NO_THROW(d.div(FieldPQ{1, 1}, FieldPQ{3, FieldPQ::kNoQ}));
  FieldPQ r = d.div(FieldPQ{6, 10}, FieldPQ{3, 5});
  EXPECT_EQ(r.p, 2u);
  EXPECT_EQ(r.q, 2u);
}

}  // namespace
}  // namespace weft
