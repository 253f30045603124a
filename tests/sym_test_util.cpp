// The scope the symbolic-arithmetic tests share.
#include "tests/sym_test_util.h"

#include <gtest/gtest.h>

namespace weft::test {

const SymScope& sym_scope() {
  static const SymScope scope = [] {
    SymScope s;
    s.declare("n", 1, 2048);
    s.declare("m", 1, 64);
    s.declare("b", 2, 8);
    s.declare("s", 0);
    s.declare("t", 0);
    s.declare("u", 1);
    s.declare("x", -8, 8);
    return s;
  }();
  return scope;
}

SymExpr sx(const std::string& text) {
  try {
    return parse_sym_expr(text, sym_scope());
  } catch (const UserError& e) {
    ADD_FAILURE() << "cannot parse '" << text << "': " << e.what();
    return 0;
  }
}

}  // namespace weft::test
