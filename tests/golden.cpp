// The golden runner: compare or rewrite, and the line diff a mismatch shows.
#include "tests/golden.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "tests/test_util.h"

namespace weft::test {
namespace {

// Lines with their terminating '\n' (the last may have none), so a missing final newline shows.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(at, end - at));
    at = end;
  }
  return lines;
}

// One line of the edit script: kept (' '), removed ('-') or added ('+'), with the positions in
// both texts before it.
struct Edit {
  char op;
  size_t from, to;
};

// The middle of a diff (after the common prefix and suffix) by longest common subsequence; a
// middle too large for the table is shown as all removed, then all added.
void diff_middle(const std::vector<std::string>& a, const std::vector<std::string>& b, size_t lo,
                 size_t a_hi, size_t b_hi, std::vector<Edit>& out) {
  const size_t n = a_hi - lo, m = b_hi - lo;
  constexpr size_t kMaxCells = size_t{1} << 22;
  if ((n + 1) * (m + 1) > kMaxCells) {
    for (size_t i = 0; i < n; ++i) out.push_back({'-', lo + i, lo});
    for (size_t j = 0; j < m; ++j) out.push_back({'+', a_hi, lo + j});
    return;
  }
  // lcs[i][j]: the longest common subsequence of a[lo+i..] and b[lo+j..].
  std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      at(i, j) =
          a[lo + i] == b[lo + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[lo + i] == b[lo + j]) {
      out.push_back({' ', lo + i++, lo + j++});
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      out.push_back({'-', lo + i++, lo + j});  // removals before additions, as diff shows them
    } else {
      out.push_back({'+', lo + i, lo + j++});
    }
  }
}

std::vector<Edit> edit_script(const std::vector<std::string>& a,
                              const std::vector<std::string>& b) {
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix &&
         a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
    ++suffix;
  std::vector<Edit> edits;
  for (size_t i = 0; i < prefix; ++i) edits.push_back({' ', i, i});
  diff_middle(a, b, prefix, a.size() - suffix, b.size() - suffix, edits);
  for (size_t k = suffix; k > 0; --k) edits.push_back({' ', a.size() - k, b.size() - k});
  return edits;
}

// A line as the diff shows it: its text without the newline, or a note that it has none.
std::string shown(char op, const std::string& line) {
  if (!line.empty() && line.back() == '\n') return op + line;
  return fmt::format("{}{}\n\\ No newline at end of file\n", op, line);
}

}  // namespace

bool updating_goldens() {
  const char* v = std::getenv("WEFT_UPDATE_GOLDEN");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

std::string unified_diff(const std::string& from, const std::string& to,
                         const std::string& from_name, const std::string& to_name, int context) {
  if (from == to) return "";
  const std::vector<std::string> a = lines_of(from), b = lines_of(to);
  const std::vector<Edit> edits = edit_script(a, b);
  const size_t ctx = static_cast<size_t>(std::max(context, 0));
  std::string out = fmt::format("--- {}\n+++ {}\n", from_name, to_name);
  constexpr int kMaxLines = 200;
  int lines = 0, cut = 0;
  size_t i = 0;
  while (i < edits.size()) {
    if (edits[i].op == ' ') {
      ++i;
      continue;
    }
    // A hunk: this change and every later one less than two contexts of kept lines away.
    const size_t start = i > ctx ? i - ctx : 0;
    size_t end = i;
    while (true) {
      while (end < edits.size() && edits[end].op != ' ') ++end;
      size_t gap = 0;
      while (end + gap < edits.size() && edits[end + gap].op == ' ') ++gap;
      if (end + gap < edits.size() && gap <= 2 * ctx) {
        end += gap;
        continue;
      }
      end = std::min(end + ctx, edits.size());
      break;
    }
    size_t from_count = 0, to_count = 0;
    for (size_t k = start; k < end; ++k) {
      from_count += edits[k].op != '+';
      to_count += edits[k].op != '-';
    }
    out += fmt::format("@@ -{},{} +{},{} @@\n", edits[start].from + (from_count > 0), from_count,
                       edits[start].to + (to_count > 0), to_count);
    for (size_t k = start; k < end; ++k) {
      if (lines++ >= kMaxLines) {
        ++cut;
        continue;
      }
      const Edit& e = edits[k];
      out += shown(e.op, e.op == '+' ? b[e.to] : a[e.from]);
    }
    i = end;
  }
  if (cut > 0) out += fmt::format("... ({} more lines of diff)\n", cut);
  return out;
}

::testing::AssertionResult matches_golden(const std::string& actual, const std::string& path) {
  const std::filesystem::path file = std::filesystem::path(path).is_absolute()
                                         ? std::filesystem::path(path)
                                         : std::filesystem::path(source_path(path));
  const bool exists = std::filesystem::exists(file);
  const std::string golden = exists ? read_text(file.string()) : "";
  if (updating_goldens()) {
    if (!exists || golden != actual) {
      std::ofstream(file, std::ios::binary | std::ios::trunc) << actual;
      std::cout << "[ GOLDEN   ] rewrote " << file.string() << std::endl;
      ::testing::Test::RecordProperty("golden_rewritten", file.string());
    }
    return ::testing::AssertionSuccess();
  }
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string regenerate = fmt::format(
      "regenerate (after checking the change is intended) with: WEFT_UPDATE_GOLDEN=1 "
      "build/weft_tests --gtest_filter={}.{}",
      test ? test->test_suite_name() : "*", test ? test->name() : "*");
  if (!exists)
    return ::testing::AssertionFailure()
           << "missing golden file " << file.string() << "; " << regenerate;
  if (golden == actual) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "differs from golden file " << file.string() << "; " << regenerate << "\n"
         << unified_diff(golden, actual, file.string() + " (golden)", "actual");
}

}  // namespace weft::test
