// The test binary's entry point: GoogleTest, plus the tiers of tests/tiers.h.
//   --weft_write_ctest=FILE [--weft_ctest_env=NAME=VALUE]...  writes ctest's tests to FILE (one
//       process per test, labelled with its tiers; the build runs this after linking) and exits.
//   --weft_list_tiers  prints each test's name and labels (tab-separated) and exits.
// While tests run, a test that loaded a generated library (in this process, or in a weft
// process it started) without the loads_generated tier is reported, and the run fails: the
// tier cannot be forgotten. Tests write their files under a directory of their own
// (testing::TempDir(), TEST_TMPDIR), removed when the process ends.
#include <gtest/gtest.h>
#include <unistd.h>
#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/generated_library.h"
#include "tests/tiers.h"

namespace {

namespace fs = std::filesystem;

struct ListedTest {
  std::string name, file;
};

std::vector<ListedTest> all_tests() {
  std::vector<ListedTest> out;
  const testing::UnitTest& u = *testing::UnitTest::GetInstance();
  for (int i = 0; i < u.total_test_suite_count(); ++i) {
    const testing::TestSuite& s = *u.GetTestSuite(i);
    for (int j = 0; j < s.total_test_count(); ++j) {
      const testing::TestInfo& t = *s.GetTestInfo(j);
      std::string name = std::string(s.name()) + "." + t.name();
      if (name.find("DISABLED_") != std::string::npos) continue;
      out.push_back({name, t.file()});
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// Every test's labels, or the errors (every test without a kind, each unknown label).
bool labels_of_all(std::vector<std::pair<ListedTest, std::vector<std::string>>>& out) {
  bool ok = true;
  for (const ListedTest& t : all_tests()) {
    std::string error;
    auto labels = weft::test::tiers_of(t.file, t.name, error);
    if (labels.empty()) {
      std::fprintf(stderr, "weft_tests: %s\n", error.c_str());
      ok = false;
    }
    out.emplace_back(t, labels);
  }
  return ok;
}

int write_ctest(const std::string& file, const std::vector<std::string>& env) {
  std::vector<std::pair<ListedTest, std::vector<std::string>>> tests;
  if (!labels_of_all(tests)) return 2;
  const std::string self = fs::canonical("/proc/self/exe").string();
  std::ofstream out(file + ".tmp");
  out << "# Written by weft_tests --weft_write_ctest (tests/main.cpp): one process per test,\n"
         "# labelled with the tiers its file declares (tests/tiers.h).\n";
  for (const auto& [t, labels] : tests) {
    out << "add_test([==[" << t.name << "]==] [==[" << self << "]==] [==[--gtest_filter=" << t.name
        << "]==])\n";
    out << "set_tests_properties([==[" << t.name << "]==] PROPERTIES LABELS [==["
        << join(labels, ";") << "]==] SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==]";
    if (!env.empty()) out << " ENVIRONMENT [==[" << join(env, ";") << "]==]";
    // Tests of generated code run hundreds of spinning threads in place of GPU threads: two at once
    // starve each other on a small machine (minutes instead of seconds), so they take turns while
    // other tests run beside them.
    if (std::find(labels.begin(), labels.end(), "loads_generated") != labels.end())
      out << " RESOURCE_LOCK generated_code";
    out << ")\n";
  }
  out.close();
  if (!out) {
    std::fprintf(stderr, "weft_tests: cannot write %s\n", file.c_str());
    return 2;
  }
  fs::rename(file + ".tmp", file);
  return 0;
}

// Reports tests that loaded a generated library without declaring the loads_generated tier.
class TierCheck : public testing::EmptyTestEventListener {
 public:
  explicit TierCheck(std::string note) : note_(std::move(note)) {}
  // The baseline moves at each suite's start (so a suite's set-up counts for its first test) and
  // after each test.
  void OnTestSuiteStart(const testing::TestSuite&) override { mark(); }
  void OnTestEnd(const testing::TestInfo& info) override {
    const bool loaded = weft::generated_libraries_opened() != opened_ || noted_bytes() != noted_;
    mark();
    if (!loaded) return;
    const std::string name = std::string(info.test_suite_name()) + "." + info.name();
    std::string error;
    auto labels = weft::test::tiers_of(info.file(), name, error);
    for (const std::string& l : labels)
      if (l == "loads_generated") return;
    std::fprintf(stderr,
                 "weft_tests: %s loaded a library weft generated but its file (%s) does not "
                 "declare the loads_generated tier: add \"loads_generated\" to its "
                 "WEFT_TEST_TIERS (tests/tiers.h)\n",
                 name.c_str(), info.file());
    violations.push_back(name);
  }
  std::vector<std::string> violations;

 private:
  void mark() {
    opened_ = weft::generated_libraries_opened();
    noted_ = noted_bytes();
  }
  uintmax_t noted_bytes() const {
    std::error_code ec;
    uintmax_t n = fs::file_size(note_, ec);
    return ec ? 0 : n;
  }
  std::string note_;
  int64_t opened_ = 0;
  uintmax_t noted_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::string ctest_file;
  std::vector<std::string> env;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--weft_write_ctest=", 0) == 0)
      ctest_file = a.substr(19);
    else if (a.rfind("--weft_ctest_env=", 0) == 0)
      env.push_back(a.substr(17));
    else if (a == "--weft_list_tiers")
      list = true;
    else {
      std::fprintf(stderr, "weft_tests: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  if (!ctest_file.empty()) return write_ctest(ctest_file, env);
  if (list) {
    std::vector<std::pair<ListedTest, std::vector<std::string>>> tests;
    if (!labels_of_all(tests)) return 2;
    for (const auto& [t, labels] : tests)
      std::printf("%s\t%s\n", t.name.c_str(), join(labels, ",").c_str());
    return 0;
  }
  // A weft process a test starts notes its loads here (runtime/generated_library.h).
  std::string note;
  bool own_note = false;
  if (const char* n = std::getenv("WEFT_NOTE_GENERATED_LIBRARIES"); n && *n) {
    note = n;
  } else {
    note = (fs::temp_directory_path() / ("weft-tests-loads-" + std::to_string(getpid()))).string();
    setenv("WEFT_NOTE_GENERATED_LIBRARIES", note.c_str(), 1);
    own_note = true;
  }
  auto* check = new TierCheck(note);
  testing::UnitTest::GetInstance()->listeners().Append(check);  // owned by gtest
  // A scratch directory per process (unless the caller chose one): files tests write do not pile
  // up in /tmp run after run.
  std::string scratch;
  if (const char* t = std::getenv("TEST_TMPDIR"); !t || !*t) {
    std::string pattern = (fs::temp_directory_path() / "weft-tests-XXXXXX").string();
    if (mkdtemp(pattern.data())) {
      scratch = pattern;
      setenv("TEST_TMPDIR", scratch.c_str(), 1);
    }
  }
  int rc = RUN_ALL_TESTS();
  if (!check->violations.empty()) {
    std::fprintf(stderr,
                 "weft_tests: %zu test(s) loaded generated libraries without the "
                 "loads_generated tier (see above)\n",
                 check->violations.size());
    rc = 1;
  }
  std::error_code ec;
  if (own_note) fs::remove(note, ec);
  if (!scratch.empty()) fs::remove_all(scratch, ec);
  return rc;
}
