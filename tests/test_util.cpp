// Shared test helpers (see test_util.h).
#include "tests/test_util.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "ir/parser.h"

namespace weft::test {

std::string source_dir() {
  // A test binary that travels without its build tree (make gpu-bundle) finds the checkout it
  // runs in through $WEFT_SOURCE_DIR.
  if (const char* env = std::getenv("WEFT_SOURCE_DIR"); env && *env) return env;
  return WEFT_SOURCE_DIR;
}

std::string source_path(const std::string& relative) {
  return source_dir() + "/" + relative;
}

std::string example_path(const std::string& name) {
  return source_path("examples/" + name);
}

Tensor<double> varied_tensor(const Shape& shape, double seed, double amplitude) {
  Tensor<double> t(shape, 0.0);
  for (size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = amplitude * std::sin(seed + 0.37 * static_cast<double>(i));
  return t;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Graph load_graph_file(const std::string& path) {
  EXPECT_TRUE(std::ifstream(path).good()) << "cannot read " << path;
  return parse_graph(read_text(path), path);
}

std::pair<int, std::string> run_weft(const std::string& args) {
  const char* env = std::getenv("WEFT_BINARY");
  std::string cmd = std::string(env && *env ? env : WEFT_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr) << cmd;
  if (!p) return {-1, ""};
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::vector<std::filesystem::path> model_fixtures() {
  std::vector<std::filesystem::path> out;
  for (const char* dir : {"tests/model", "examples/models"})
    for (const auto& e : std::filesystem::directory_iterator(source_path(dir)))
      if (e.path().extension() == ".wmod") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string python_with_numpy() {
  for (const char* p : {"/usr/bin/python3", "python3"})
    if (std::system((std::string(p) + " -c 'import numpy' 2>/dev/null").c_str()) == 0) return p;
  return "";
}

void run_numpy_reference(const std::string& script, const std::string& work_name,
                         const std::string& flags) {
  std::string py = python_with_numpy();
  ASSERT_FALSE(py.empty()) << "no python3 with numpy: run scripts/install-deps.sh";
  std::string work = testing::TempDir() + "/" + work_name;
  std::filesystem::create_directories(work);
  const char* env = std::getenv("WEFT_BINARY");
  std::string weft = env && *env ? env : WEFT_BINARY;
  std::string cmd = py + " '" + source_path(script) + "' '" + weft + "' '" + work + "' " + flags +
                    " > '" + work + "/log.txt' 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << read_text(work + "/log.txt");
}

}  // namespace weft::test
