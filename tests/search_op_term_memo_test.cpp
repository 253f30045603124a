// The per-thread memo of the search oracle's op_term (search/absexpr_oracle.h): it
// answers each oracle with its own terms, on every thread.
#include "search/absexpr_oracle.h"

#include <gtest/gtest.h>

#include <thread>

#include "ir/expand_composites.h"
#include "ir/parser.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

Graph program(const std::string& text) {
  return expand_composites(parse_graph(text, "t.weft"));
}

TEST(OpTermMemo, AnswersEachOracleWithItsOwnTerms) {
  // Two oracles whose stores differ in size, so one call's term ids differ between them: a memo
  // that answered one oracle with the other's id would be caught.
  AbsExprOracle small(
      program("program a\ninput P: f32[4, 8]\ninput Q: f32[4, 8]\n"
              "O = add(P, Q)\noutput O\n"));
  AbsExprOracle large(
      program("program b\ninput R: f32[4, 8]\ninput S: f32[4, 8]\n"
              "E = exp(R)\nM = mul(E, S)\nT = sum(M, dim=1)\noutput T\n"));
  const TermRef p = small.input_term(0), q = small.input_term(1);
  const TermRef r = large.input_term(0), s = large.input_term(1);
  ASSERT_EQ(p, r);
  ASSERT_EQ(q, s);
  struct Call {
    OpKind kind;
    int64_t k;
    Rational c;
  };
  const std::vector<Call> calls = {{OpKind::mul, 0, 0},
                                   {OpKind::div, 0, 0},
                                   {OpKind::sum, 8, 0},
                                   {OpKind::scale, 0, Rational(1)},
                                   {OpKind::exp, 0, 0}};
  bool some_id_differs = false;
  for (int round = 0; round < 3; ++round)
    for (const Call& call : calls) {
      const bool unary =
          call.kind == OpKind::sum || call.kind == OpKind::exp || call.kind == OpKind::scale;
      const TermRef in_small = small.op_term(call.kind, p, unary ? 0 : q, call.k, call.c);
      const TermRef in_large = large.op_term(call.kind, r, unary ? 0 : s, call.k, call.c);
      some_id_differs |= in_small != in_large;
      const std::string a = small.text(in_small), b = large.text(in_large);
      EXPECT_NE(a.find('P'), std::string::npos) << a;
      EXPECT_EQ(a.find('R'), std::string::npos) << a;
      EXPECT_NE(b.find('R'), std::string::npos) << b;
      EXPECT_EQ(b.find('P'), std::string::npos) << b;
      // The same call on another thread (its own memo) gives the same term.
      TermRef elsewhere = 0;
      std::thread([&] {
        elsewhere = small.op_term(call.kind, p, unary ? 0 : q, call.k, call.c);
      }).join();
      EXPECT_EQ(elsewhere, in_small);
    }
  EXPECT_TRUE(some_id_differs) << "the test needs the two stores to number terms differently";
}

TEST(OpTermMemo, TellsConstantsAndSizesApart) {
  AbsExprOracle o(program("program a\ninput P: f32[4, 8]\nO = exp(P)\noutput O\n"));
  const TermRef p = o.input_term(0);
  EXPECT_NE(o.op_term(OpKind::sum, p, 0, 8, 0), o.op_term(OpKind::sum, p, 0, 4, 0));
  EXPECT_EQ(o.op_term(OpKind::sum, p, 0, 8, 0), o.op_term(OpKind::sum, p, 0, 8, 0));
  EXPECT_EQ(o.op_term(OpKind::scale, p, 0, 0, Rational(2)),
            o.op_term(OpKind::scale, p, 0, 0, Rational(2)));
}

}  // namespace
}  // namespace weft
