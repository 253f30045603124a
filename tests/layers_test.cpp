// Tests of the include-layering check (scripts/check-layers.sh) on small made-up trees: it must
// pass a tree that follows its layers.txt and name each kind of violation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

namespace fs = std::filesystem;

// Writes `files` (path → content) under a fresh directory, runs the check there and returns its
// exit status and output.
std::pair<int, std::string> check_tree(const std::map<std::string, std::string>& files) {
  fs::path root = fs::temp_directory_path() / fmt::format("weft-layers-{}", getpid());
  fs::remove_all(root);
  for (const auto& [path, text] : files) {
    fs::create_directories((root / path).parent_path());
    std::ofstream(root / path) << text;
  }
  std::string cmd = test::source_path("scripts/check-layers.sh") + " " + root.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  int status = p ? pclose(p) : -1;
  fs::remove_all(root);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

const char* kLayers =
    "# a comment\n"
    "library  base\n"
    "library  left right  # two independent folders\n"
    "library  top\n"
    "allow base/legacy.cpp top/t.h  # goes away with legacy.cpp\n";

TEST(Layers, PassesATreeThatFollowsTheOrder) {
  auto [rc, out] =
      check_tree({{"scripts/layers.txt", kLayers},
                  {"base/b.h", "#pragma once\n"},
                  {"base/legacy.cpp", "#include \"top/t.h\"\n"},
                  {"left/l.h", "#include \"base/b.h\"\n#include <vector>\n"},
                  {"right/deep/r.cuh", "#include \"base/b.h\"\n"},
                  {"top/t.h", "#include \"left/l.h\"\n #  include \"right/deep/r.cuh\"\n"},
                  {"top/notes.md", "#include \"nothing/checked.h\"\n"},
                  // Not sources of the tree: a build tree and a hidden folder.
                  {"build-x/CMakeCache.txt", ""},
                  {"build-x/CMakeFiles/id.cpp", "int id;\n"},
                  {".cache/x.cpp", "#include \"top/t.h\"\n"}});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "");
}

TEST(Layers, NamesAnUpwardIncludeASiblingIncludeAndAFileInNoLayer) {
  auto [rc, out] = check_tree({{"scripts/layers.txt", kLayers},
                               {"base/b.h", "#pragma once\n#include \"top/t.h\"\n"},
                               {"base/legacy.cpp", "#include \"top/t.h\"\n"},
                               {"left/l.cpp", "\n\n#include \"right/r.h\"\n"},
                               {"right/r.h", "#pragma once\n"},
                               {"top/t.h", "#pragma once\n"},
                               {"stray/s.cpp", "int x;\n"}});
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("base/b.h:2: includes top/t.h: top is a later layer than base"),
            std::string::npos)
      << out;
  EXPECT_NE(
      out.find(
          "left/l.cpp:3: includes right/r.h: right and left are independent folders of one layer"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("stray/s.cpp: in no layer"), std::string::npos) << out;
  EXPECT_EQ(out.find("legacy"), std::string::npos) << "an allowed include: " << out;
}

TEST(Layers, FailsWhenAnAllowedIncludeIsGone) {
  auto [rc, out] = check_tree({{"scripts/layers.txt", kLayers},
                               {"base/legacy.cpp", "int moved;\n"},
                               {"top/t.h", "#pragma once\n"}});
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("\"base/legacy.cpp top/t.h\" is gone"), std::string::npos) << out;
}

}  // namespace
}  // namespace weft
