// Runs `weft check` on every malformed file of tests/bad/: exit code 1, a located message
// containing the file's `# expect:` text, and no crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

std::string binary() {
  const char* env = std::getenv("WEFT_BINARY");
  return env && *env ? env : WEFT_BINARY;
}

struct Result {
  int exit_code = -1;
  std::string stderr_text;
};

Result run_check(const std::string& file) {
  std::string err_path =
      testing::TempDir() + "/weft_bad_stderr." + std::to_string(getpid()) + ".txt";
  std::string cmd = "'" + binary() + "' check '" + file + "' >/dev/null 2>'" + err_path + "'";
  int status = std::system(cmd.c_str());
  Result r;
  if (WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  else
    r.exit_code = 1000 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  std::ifstream in(err_path, std::ios::binary);
  r.stderr_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return r;
}

std::string expectation(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string first;
  std::getline(in, first);
  const std::string tag = "# expect: ";
  if (first.rfind(tag, 0) != 0) return "";
  std::string e = first.substr(tag.size());
  while (!e.empty() && (e.back() == '\r' || e.back() == ' ')) e.pop_back();
  return e;
}

TEST(BadCorpus, EveryFileIsRejectedWithALocatedMessage) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(weft::test::source_dir() + "/tests/bad"))
    if (e.path().extension() == ".weft") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 40u);
  for (const auto& f : files) {
    std::string want = expectation(f);
    ASSERT_FALSE(want.empty()) << f << " lacks a first line '# expect: <message part>'";
    Result r = run_check(f.string());
    EXPECT_EQ(r.exit_code, 1) << f << "\n" << r.stderr_text;
    std::string prefix = f.string() + ":";
    size_t at = r.stderr_text.find(prefix);
    bool located = false;
    if (at != std::string::npos) {
      // <path>:<line>:<col>: error:
      size_t i = at + prefix.size();
      auto digits = [&](size_t& k) {
        size_t s = k;
        while (k < r.stderr_text.size() &&
               std::isdigit(static_cast<unsigned char>(r.stderr_text[k])))
          ++k;
        return k > s;
      };
      located = digits(i) && r.stderr_text.compare(i, 1, ":") == 0 && (++i, digits(i)) &&
                r.stderr_text.compare(i, 9, ": error: ") == 0;
    }
    EXPECT_TRUE(located) << f << ": no '<path>:<line>:<col>: error: ' in\n" << r.stderr_text;
    EXPECT_NE(r.stderr_text.find(want), std::string::npos)
        << f << ": expected the message to contain '" << want << "', got\n"
        << r.stderr_text;
  }
}

}  // namespace
}  // namespace weft
