// The registry behind WEFT_TEST_TIERS (see tiers.h).
#include "tests/tiers.h"

#include <algorithm>
#include <map>
#include <set>

namespace weft::test {

namespace {

struct Declaration {
  std::string pattern;
  std::vector<std::string> labels;
};

// By file, in declaration order (a function-local static: declarations run at static
// initialization, in any order across files).
std::map<std::string, std::vector<Declaration>>& declarations() {
  static std::map<std::string, std::vector<Declaration>> d;
  return d;
}

const std::set<std::string> kKinds = {"unit", "golden", "property", "gpu"};
// heavy: minutes, or wall-clock assertions, in the sanitized Debug build: `make test` runs it in
// the optimized build only.
const std::set<std::string> kTreatments = {"heavy", "loads_generated", "tsan"};

}  // namespace

bool declare_tiers(const char* file, const char* pattern,
                   std::initializer_list<const char*> labels) {
  Declaration d{pattern, {}};
  for (const char* l : labels) d.labels.emplace_back(l);
  declarations()[file].push_back(std::move(d));
  return true;
}

bool matches_pattern(const std::string& pattern, const std::string& name) {
  // Iterative glob with backtracking to the last '*'.
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<std::string> tiers_of(const std::string& file, const std::string& full_name,
                                  std::string& error) {
  std::string kind;
  std::set<std::string> treatments;
  auto it = declarations().find(file);
  if (it != declarations().end())
    for (const Declaration& d : it->second) {
      if (!matches_pattern(d.pattern, full_name)) continue;
      for (const std::string& l : d.labels) {
        if (kKinds.count(l))
          kind = l;
        else if (kTreatments.count(l))
          treatments.insert(l);
        else {
          error = "unknown tier '" + l + "' declared in " + file +
                  " (kinds: unit, golden, property, gpu; treatments: heavy, loads_generated, tsan)";
          return {};
        }
      }
    }
  if (kind.empty()) {
    error = "test " + full_name + " (" + file +
            ") has no kind: declare WEFT_TEST_TIERS(\"unit\"|\"golden\"|\"property\"|\"gpu\", "
            "...) in its file (tests/tiers.h)";
    return {};
  }
  std::vector<std::string> out = {kind};
  out.insert(out.end(), treatments.begin(), treatments.end());
  return out;
}

}  // namespace weft::test
