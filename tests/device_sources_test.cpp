// The device and support sources generated code pastes in (codegen/cuda/device/*.cuh,
// codegen/cpu/support/*.h, mpk/device/*.cuh): embedded as they are in the tree, and each compiles
// on its own: the CUDA files with nvcc for sm_80 and sm_90a (skipped without nvcc) and in host
// emulation with the host compiler, the CPU support with the host compiler, all with warnings as
// errors.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "codegen/cuda/prelude.h"
#include "core/embedded_files.h"
#include "runtime/cuda_runtime.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

using test::source_path;

std::vector<std::string> tree_files() {
  std::vector<std::string> out;
  for (const auto& [dir, ext] :
       {std::pair{"codegen/cuda/device", ".cuh"}, std::pair{"codegen/cpu/support", ".h"},
        std::pair{"mpk/device", ".cuh"}, std::pair{"rewrite/rules", ".rules"}})
    for (const auto& e : std::filesystem::directory_iterator(source_path(dir)))
      if (e.path().extension() == ext)
        out.push_back(std::string(dir) + "/" + e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Compiles a translation unit that only includes `file` (so `#pragma once` is not in the main
// file); returns the compiler's exit code and output.
std::pair<int, std::string> compile_alone(const std::string& compiler_and_flags,
                                          const std::string& file, const std::string& ext) {
  std::string dir = testing::TempDir() + "/weft_device_sources_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string stem = std::filesystem::path(file).stem().string();
  std::string unit = dir + "/" + stem + ext, log = dir + "/" + stem + ext + ".log";
  std::ofstream(unit) << "#include \"" << file << "\"\n";
  std::string cmd =
      fmt::format("{} -I '{}' '{}' > '{}' 2>&1", compiler_and_flags, source_path(""), unit, log);
  int rc = std::system(cmd.c_str());
  return {rc, cmd + "\n" + test::read_text(log).substr(0, 4000)};
}

const char* kHostEmulation =
    "g++ -std=c++20 -x c++ -DWEFT_HOST_EMULATION -fsyntax-only -Wall -Wextra -Werror";

TEST(DeviceSources, EmbeddedFilesAreTheTreesFiles) {
  std::vector<std::string> embedded;
  for (const EmbeddedFile& f : embedded_files()) {
    embedded.emplace_back(f.path);
    EXPECT_EQ(f.text, test::read_text(source_path(std::string(f.path)))) << f.path;
  }
  EXPECT_EQ(embedded, tree_files());
  EXPECT_THROW(embedded_file("codegen/cuda/device/missing.cuh"), InternalError);
}

// The pasted text is self-contained: every include of an embedded file is inlined once and
// nothing refers to the tree any more.
TEST(DeviceSources, ExpandedTextsIncludeNoTreeFiles) {
  for (const char* root : {"codegen/cuda/device/prelude.cuh", "codegen/cpu/support/weft_cpu.h"}) {
    SCOPED_TRACE(root);
    std::string text = expand_embedded(root);
    EXPECT_EQ(text.find("#include \""), std::string::npos);
    EXPECT_EQ(text.find("#pragma once"), std::string::npos);
  }
  const std::string& prelude = cuda_prelude();
  for (const char* part :
       {"// codegen/cuda/device/cuda.cuh\n", "// codegen/cuda/device/emulation.cuh\n"})
    EXPECT_NE(prelude.find(part), std::string::npos) << part;
  // Alone, as the generated units have it, the prelude compiles in host emulation.
  std::string dir = testing::TempDir() + "/weft_device_sources_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::string unit = dir + "/expanded_prelude.cc";
  std::ofstream(unit) << prelude;
  std::string cmd = fmt::format("{} '{}' > '{}.log' 2>&1", kHostEmulation, unit, unit);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << test::read_text(unit + ".log");
}

TEST(DeviceSources, CudaFilesCompileForHostEmulation) {
  for (const char* f : {"codegen/cuda/device/prelude.cuh", "codegen/cuda/device/emulation.cuh",
                        "mpk/device/protocol.cuh", "mpk/device/launch_check.cuh",
                        "mpk/device/megakernel_abi.cuh"}) {
    auto [rc, log] = compile_alone(kHostEmulation, f, ".cc");
    EXPECT_EQ(rc, 0) << log;
  }
}

TEST(DeviceSources, CudaFilesCompileWithNvccForSm80AndSm90a) {
  std::string nvcc;
  try {
    nvcc = find_nvcc();
  } catch (const UserError& e) {
    GTEST_SKIP() << e.message();
  }
  // The persistent kernel's headers that stand alone (megakernel.cuh needs bodies before it:
  // MpkMegakernel.UnitCompilesWithNvccForSm80AndSm90a compiles a whole unit).
  for (const char* f : {"codegen/cuda/device/prelude.cuh", "codegen/cuda/device/cuda.cuh",
                        "mpk/device/protocol.cuh", "mpk/device/launch_check.cuh",
                        "mpk/device/megakernel_abi.cuh"}) {
    auto [rc, log] = compile_alone(
        fmt::format("'{}' -std=c++17 -c -o /dev/null -t 2 -gencode arch=compute_80,code=sm_80 "
                    "-gencode arch=compute_90a,code=sm_90a -Werror all-warnings "
                    "-Xcompiler -Wall,-Wextra,-Werror",
                    nvcc),
        f, ".cu");
    EXPECT_EQ(rc, 0) << log;
  }
}

TEST(DeviceSources, CpuSupportCompilesWithTheHostCompiler) {
  for (const char* f : {"codegen/cpu/support/weft_cpu.h", "codegen/cpu/support/weft_rt.h"}) {
    auto [rc, log] =
        compile_alone("c++ -std=c++17 -x c++ -fsyntax-only -Wall -Wextra -Werror", f, ".cc");
    EXPECT_EQ(rc, 0) << log;
  }
}

}  // namespace
}  // namespace weft
