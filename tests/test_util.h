// Helpers shared by the test files: paths in the source tree, reading files, running the CLI.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace weft::test {

// The checkout the tests read their data from: $WEFT_SOURCE_DIR, else the one they were built in.
std::string source_dir();
// source_dir()/relative, and examples/NAME in particular.
std::string source_path(const std::string& relative);
std::string example_path(const std::string& name);

// A tensor of `shape` holding amplitude * sin(seed + 0.37 i): reproducible inputs whose elements
// differ and are not zero, for comparing two runs of a model.
Tensor<double> varied_tensor(const Shape& shape, double seed, double amplitude = 1);

// The whole file, byte for byte; empty when it cannot be read (callers that need it say so).
std::string read_text(const std::string& path);

// The .wmod files of tests/model and examples/models (the model fixtures), sorted.
std::vector<std::filesystem::path> model_fixtures();

// Reads and parses a µGraph file; a missing file is a test failure.
Graph load_graph_file(const std::string& path);

// Runs the weft binary ($WEFT_BINARY, else the one built with the tests) with `args` through the
// shell; returns its exit code (-1 if it did not exit) and its stdout and stderr, interleaved.
std::pair<int, std::string> run_weft(const std::string& args);

// A python3 that has NumPy (scripts/install-deps.sh installs Debian's python3-numpy); empty when
// there is none.
std::string python_with_numpy();

// Runs a NumPy reference script (SCRIPT WEFT_BINARY WORK_DIR FLAGS...) in TempDir()/WORK_NAME and
// expects it to exit 0 (every output matched), showing its log otherwise.
void run_numpy_reference(const std::string& script, const std::string& work_name,
                         const std::string& flags);

}  // namespace weft::test
