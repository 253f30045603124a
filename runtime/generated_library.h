// Loading a shared library weft generated and built (CPU programs, CUDA units and their host
// emulation, the model kernel library, persistent kernels): one door, so that every load is
// counted and a test that loads one can be told apart from one that does not (tests/tiers.h).
#pragma once

#include <cstdint>
#include <string>

namespace weft {

// dlopen(path, RTLD_NOW | RTLD_LOCAL); a UserError naming the file when it cannot be loaded.
// Each load is counted, and when $WEFT_NOTE_GENERATED_LIBRARIES names a file, `path` is appended
// to it as a line (how a test learns that a weft process it started loaded one).
void* open_generated_library(const std::string& path);

// How many generated libraries this process has opened so far.
int64_t generated_libraries_opened();

}  // namespace weft
