// The test tiers, declared in each test file beside its tests: what kind of test it is and how
// the sanitizer runs must treat it. They become ctest labels (tests/main.cpp writes ctest's file
// from them), so `ctest -L NAME` selects a tier and a new test file gets its treatment where it
// is written. A test without a kind is an error when the tests are listed.
//
// Kinds (exactly one per test): unit, golden, property, gpu (skips cleanly without a GPU).
// Treatments (any): loads_generated (loads libraries weft generated, code ASan does not
// instrument, so `make test` runs it in the optimized build; a test that loads one without the
// label fails), heavy (minutes under ASan, or wall-clock assertions its slowness distorts: also
// the optimized build), tsan (runs under ThreadSanitizer as well).
//
//   WEFT_TEST_TIERS("unit", "loads_generated");          // every test of this file
//   WEFT_TEST_TIERS_OF("MpkMegakernelGpu.*", "gpu");     // the file's tests matching a pattern
//
// A pattern is a gtest filter pattern ('*', '?') on Suite.Name; a later declaration's kind
// replaces an earlier one's, treatments add up.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

namespace weft::test {

// Registers `labels` for the tests defined in `file` (__FILE__) whose full name matches `pattern`.
bool declare_tiers(const char* file, const char* pattern,
                   std::initializer_list<const char*> labels);

// The labels of a test, kind first; `error` says why there are none (no kind, an unknown label).
std::vector<std::string> tiers_of(const std::string& file, const std::string& full_name,
                                  std::string& error);

// Whether `name` matches the gtest filter pattern `pattern` ('*' and '?').
bool matches_pattern(const std::string& pattern, const std::string& name);

}  // namespace weft::test

#define WEFT_TIERS_JOIN2(a, b) a##b
#define WEFT_TIERS_JOIN(a, b) WEFT_TIERS_JOIN2(a, b)
#define WEFT_TEST_TIERS(...)                                                  \
  [[maybe_unused]] static const bool WEFT_TIERS_JOIN(weft_tiers_, __LINE__) = \
      ::weft::test::declare_tiers(__FILE__, "*", {__VA_ARGS__})
#define WEFT_TEST_TIERS_OF(pattern, ...)                                      \
  [[maybe_unused]] static const bool WEFT_TIERS_JOIN(weft_tiers_, __LINE__) = \
      ::weft::test::declare_tiers(__FILE__, pattern, {__VA_ARGS__})
