// The golden runner itself (tests/golden.h): its diff, and comparing, failing and rewriting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "tests/golden.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

namespace fs = std::filesystem;

TEST(GoldenDiff, EqualTextsHaveNoDiff) {
  EXPECT_EQ(test::unified_diff("a\nb\n", "a\nb\n", "x", "y"), "");
}

TEST(GoldenDiff, OneChangedLineWithItsContext) {
  std::string from, to;
  for (int i = 1; i <= 20; ++i) {
    from += std::to_string(i) + "\n";
    to += (i == 10 ? std::string("ten") : std::to_string(i)) + "\n";
  }
  EXPECT_EQ(test::unified_diff(from, to, "golden", "actual"),
            "--- golden\n+++ actual\n@@ -7,7 +7,7 @@\n 7\n 8\n 9\n-10\n+ten\n 11\n 12\n 13\n");
}

TEST(GoldenDiff, NearbyChangesShareAHunkAndFarOnesDoNot) {
  std::string from, to;
  for (int i = 1; i <= 30; ++i) {
    from += std::to_string(i) + "\n";
    if (i != 2 && i != 6) to += std::to_string(i) + "\n";  // 2 and 6: one hunk
    if (i == 25) to += "new\n";                            // far below: a second hunk
  }
  const std::string diff = test::unified_diff(from, to, "a", "b");
  EXPECT_NE(diff.find("@@ -1,9 +1,7 @@\n 1\n-2\n 3\n 4\n 5\n-6\n 7\n 8\n 9\n"), std::string::npos)
      << diff;
  EXPECT_NE(diff.find("@@ -23,6 +21,7 @@\n 23\n 24\n 25\n+new\n 26\n 27\n 28\n"), std::string::npos)
      << diff;
}

TEST(GoldenDiff, AMissingFinalNewlineShows) {
  EXPECT_EQ(test::unified_diff("a\nb\n", "a\nb", "x", "y"),
            "--- x\n+++ y\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n");
}

TEST(GoldenDiff, AddingToAnEmptyText) {
  EXPECT_EQ(test::unified_diff("", "x\n", "a", "b"), "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n");
}

// WEFT_UPDATE_GOLDEN set for one scope, restored after.
class UpdateGoldens {
 public:
  explicit UpdateGoldens(const char* value) {
    if (const char* old = std::getenv(kName)) old_ = old;
    ::setenv(kName, value, 1);
  }
  ~UpdateGoldens() {
    if (old_)
      ::setenv(kName, old_->c_str(), 1);
    else
      ::unsetenv(kName);
  }

 private:
  static constexpr const char* kName = "WEFT_UPDATE_GOLDEN";
  std::optional<std::string> old_;
};

TEST(GoldenRunner, ComparesFailsWithADiffAndRewritesWhenAsked) {
  const fs::path dir = fs::temp_directory_path() / ("weft_golden_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string file = (dir / "x.txt").string();
  std::ofstream(file) << "one\ntwo\n";
  {
    UpdateGoldens off("0");
    EXPECT_FALSE(test::updating_goldens());
    EXPECT_TRUE(test::matches_golden("one\ntwo\n", file));
    const ::testing::AssertionResult differs = test::matches_golden("one\n2\n", file);
    EXPECT_FALSE(differs);
    EXPECT_NE(std::string(differs.message()).find("-two\n+2\n"), std::string::npos)
        << differs.message();
    EXPECT_NE(std::string(differs.message()).find("WEFT_UPDATE_GOLDEN=1"), std::string::npos);
    const ::testing::AssertionResult missing = test::matches_golden("x", file + ".none");
    EXPECT_FALSE(missing);
    EXPECT_NE(std::string(missing.message()).find("missing golden file"), std::string::npos);
  }
  {
    UpdateGoldens on("1");
    EXPECT_TRUE(test::updating_goldens());
    EXPECT_TRUE(test::matches_golden("one\n2\n", file));
    EXPECT_TRUE(test::matches_golden("new\n", file + ".new"));
  }
  EXPECT_EQ(test::read_text(file), "one\n2\n");
  EXPECT_EQ(test::read_text(file + ".new"), "new\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weft
