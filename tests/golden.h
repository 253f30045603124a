// Golden files, one runner for every IR: a text compared with its checked-in file, a unified diff
// on a mismatch, and one switch to regenerate them all (WEFT_UPDATE_GOLDEN=1 rewrites instead of
// comparing). docs/architecture.md, "Golden tests".
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace weft::test {

// Whether this run rewrites golden files: WEFT_UPDATE_GOLDEN is set, and not to "" or "0".
bool updating_goldens();

// `actual` against the golden file `path` (absolute, or relative to source_dir()): a failure on a
// mismatch or a missing file, showing a unified diff (golden to actual) and the command that
// regenerates it. When updating_goldens(), the file is written instead (the test prints that it
// rewrote it) and the result is a success.
::testing::AssertionResult matches_golden(const std::string& actual, const std::string& path);

// A unified diff of two texts by lines ("--- FROM", "+++ TO", "@@ -1,3 +1,4 @@" hunks with
// `context` lines around each change); empty when they are equal. Long diffs are cut short.
std::string unified_diff(const std::string& from, const std::string& to,
                         const std::string& from_name, const std::string& to_name, int context = 3);

}  // namespace weft::test
