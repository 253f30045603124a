// Golden tests of the symbolic normal form: tests/golden/sym/normal_forms.txt lists inputs and
// the exact normal form each must print as (the golden runner, tests/golden.h, compares the file
// with its inputs' normal forms; WEFT_UPDATE_GOLDEN=1 rewrites the expected side).
#include <gtest/gtest.h>

#include <sstream>

#include "tests/golden.h"
#include "tests/sym_test_util.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("golden");

namespace weft {
namespace {

TEST(SymGolden, NormalForms) {
  const std::string path = "tests/golden/sym/normal_forms.txt";
  std::istringstream in(test::read_text(test::source_path(path)));
  const std::string arrow = "  =>  ";
  std::string line, actual;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') {
      actual += line + "\n";
      continue;
    }
    size_t at = line.find(arrow);
    ASSERT_NE(at, std::string::npos) << "malformed golden line: " << line;
    std::string input = line.substr(0, at), expected = line.substr(at + arrow.size());
    SymExpr e = test::sx(input);
    actual += input + arrow + e.str() + "\n";
    if (!test::updating_goldens()) {
      EXPECT_TRUE(test::sx(expected) == e) << expected << " does not parse back to itself";
    }
    ++checked;
  }
  // Every line's normal form as the file has it.
  EXPECT_TRUE(test::matches_golden(actual, path));
  EXPECT_GE(checked, 50);
}

}  // namespace
}  // namespace weft
