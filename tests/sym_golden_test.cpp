// Golden tests of the symbolic normal form: tests/golden/sym/normal_forms.txt lists inputs and
// the exact normal form each must print as (WEFT_UPDATE_GOLDEN=1 rewrites the expected side).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/sym_test_util.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("golden");

namespace weft {
namespace {

TEST(SymGolden, NormalForms) {
  const std::string path = test::source_path("tests/golden/sym/normal_forms.txt");
  std::istringstream in(test::read_text(path));
  const bool update = std::getenv("WEFT_UPDATE_GOLDEN") != nullptr;
  const std::string arrow = "  =>  ";
  std::string line, rewritten;
  int checked = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') {
      rewritten += line + "\n";
      continue;
    }
    size_t at = line.find(arrow);
    ASSERT_NE(at, std::string::npos) << "malformed golden line: " << line;
    std::string input = line.substr(0, at), expected = line.substr(at + arrow.size());
    SymExpr e = test::sx(input);
    rewritten += input + arrow + e.str() + "\n";
    if (update) continue;
    EXPECT_EQ(e.str(), expected) << "normal form of " << input;
    EXPECT_TRUE(test::sx(expected) == e) << expected << " does not parse back to itself";
    ++checked;
  }
  if (update) {
    std::ofstream(path) << rewritten;
    GTEST_SKIP() << "rewrote " << path;
  }
  EXPECT_GE(checked, 50);
}

}  // namespace
}  // namespace weft
