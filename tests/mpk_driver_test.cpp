// The mega-kernel as library calls (driver/mpk_program.h, driver/mpk_run.h): preparing a program
// for a platform, the compiler's step hook and early stop, a host run against its reference, and
// the decode interface a decode loop needs (declared, passed, missing, malformed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/target.h"
#include "driver/mpk_program.h"
#include "driver/mpk_run.h"
#include "ir/parser.h"
#include "mpk/decode_interface.h"
#include "mpk/passes/pipeline.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");
WEFT_TEST_TIERS_OF("MpkDriver.HostRun*", "loads_generated");

namespace weft {
namespace {

const char* const kTinyDecoder = "examples/tiny_decoder_step.weft";
const char* const kQwen3Tiny = "examples/qwen3_tiny_decode_step.weft";

Graph program(const std::string& path) {
  return test::load_graph_file(test::source_path(path));
}

// The tiny decoder's text without its `interface decode(...)` statement.
Graph undeclared_decoder() {
  std::string text = test::read_text(test::source_path(kTinyDecoder));
  std::string stripped = std::regex_replace(text, std::regex("\ninterface decode\\([^)]*\\)"), "");
  EXPECT_NE(stripped, text) << "the example declares no decode interface";
  return parse_graph(stripped, kTinyDecoder);
}

std::string user_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(MpkDriver, CompileCallsTheHookAfterEveryStepInOrder) {
  MpkProgram p = prepare_megakernel(program("tests/golden/mpk/fork.weft"), {});
  EXPECT_EQ(p.platform, MpkPlatform::host);
  EXPECT_EQ(p.plan.target, "cpu");
  std::vector<std::string> steps;
  MpkCompiled c = compile_megakernel(p, "", [&](const std::string& step, const TaskGraph& g) {
    EXPECT_FALSE(g.tasks.empty()) << step;
    steps.push_back(step);
  });
  EXPECT_EQ(steps, mpk_passes());
  EXPECT_FALSE(c.blob.empty());
}

TEST(MpkDriver, StopAfterEndsAtThatStepWithoutEncoding) {
  MpkProgram p = prepare_megakernel(program("tests/golden/mpk/fork.weft"), {});
  std::vector<std::string> steps;
  MpkCompiled c = compile_megakernel(
      p, "deps", [&](const std::string& step, const TaskGraph&) { steps.push_back(step); });
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.back(), "deps");
  EXPECT_LT(steps.size(), mpk_passes().size());
  EXPECT_TRUE(c.blob.empty());
  EXPECT_NE(user_error([&] { compile_megakernel(p, "no-such-step"); }).find("decompose"),
            std::string::npos);
}

TEST(MpkDriver, HostRunMatchesItsReferenceOnNonTrivialOutputs) {
  MpkProgramOptions o;
  o.workers = 3;
  o.data_dependent_reads = "X";
  MegakernelRunner runner(prepare_megakernel(program("tests/golden/mpk/fork.weft"), o));
  EXPECT_FALSE(runner.compiled().graph.tasks.empty());
  MpkRunOptions ro;
  ro.iterations = 2;
  ro.trace = true;
  MpkRunReport r = runner.run(ro);
  EXPECT_TRUE(r.same);
  ASSERT_FALSE(r.outputs.empty());
  double magnitude = 0;
  for (const auto& out : r.outputs)
    for (float v : out) magnitude = std::max(magnitude, std::abs(static_cast<double>(v)));
  EXPECT_GT(magnitude, 0) << "trivial outputs";
  EXPECT_GT(r.traced_tasks, 0u);
  EXPECT_NE(r.trace_json.find("traceEvents"), std::string::npos);
}

TEST(MpkDriver, PlatformsAndPlansMustAgree) {
  EXPECT_NE(user_error([] { mpk_platform_by_name("tpu"); }).find("host, emulation or gpu"),
            std::string::npos);
  MpkProgram host = prepare_megakernel(program("tests/golden/mpk/fork.weft"), {});
  MpkProgramOptions emulation;
  emulation.platform = MpkPlatform::emulation;
  EXPECT_NE(user_error([&] { prepare_megakernel(host.plan, emulation); }).find("does not run on"),
            std::string::npos);
  emulation.target = &target_by_name("cpu");
  EXPECT_NE(user_error([&] {
              prepare_megakernel(program("tests/golden/mpk/fork.weft"), emulation);
            }).find("needs a GPU target"),
            std::string::npos);
}

TEST(MpkDriver, ADecodeLoopNeedsADeclaredOrPassedInterface) {
  MpkProgramOptions o;
  o.platform = MpkPlatform::emulation;
  o.decode_loop = true;
  EXPECT_TRUE(prepare_megakernel(program(kTinyDecoder), o).decoder());

  Graph undeclared = undeclared_decoder();
  std::string message = user_error([&] { prepare_megakernel(undeclared, o); });
  EXPECT_NE(message.find("declares no decode interface"), std::string::npos) << message;
  EXPECT_NE(message.find("interface decode("), std::string::npos) << "no hint: " << message;

  // The caller may pass the interface the program does not declare.
  o.decode = program(kTinyDecoder).interfaces.at(0);
  MpkProgram passed = prepare_megakernel(undeclared, o);
  EXPECT_TRUE(passed.decoder());
  EXPECT_EQ(decode_interface(passed.plan).layers.size(), 2u);
}

TEST(MpkDriver, AMalformedInterfaceNamesTheRoleAndTheTensor) {
  ProgramInterface wrong = program(kTinyDecoder).interfaces.at(0);
  for (auto& [role, values] : wrong.roles)
    if (role == "k_cache") values = {"X", "Kc1"};  // [1, D], not [Hkv, dh, T]
  MpkProgramOptions o;
  o.platform = MpkPlatform::emulation;
  o.decode_loop = true;
  o.decode = wrong;
  std::string message = user_error([&] { prepare_megakernel(program(kTinyDecoder), o); });
  EXPECT_NE(message.find("k_cache X must be [Hkv, dh, 16]"), std::string::npos) << message;

  ProgramInterface missing = *o.decode;
  std::erase_if(missing.roles, [](const auto& r) { return r.first == "logits"; });
  o.decode = missing;
  message = user_error([&] { prepare_megakernel(program(kTinyDecoder), o); });
  EXPECT_NE(message.find("role logits is missing"), std::string::npos) << message;
}

// Without a prefix, the data-dependent kernels of a decode step come from its interface, not from
// tensor names; on the examples they are the kernels the old name rule (prefix Kc) chose.
TEST(MpkDriver, TheInterfaceChoosesTheDataDependentKernels) {
  for (const char* path : {kTinyDecoder, kQwen3Tiny}) {
    MpkProgramOptions o;
    o.platform = MpkPlatform::emulation;
    MpkProgram p = prepare_megakernel(program(path), o);
    std::set<std::string> chosen = p.options.mpk.data_dependent;
    EXPECT_FALSE(chosen.empty()) << path;
    EXPECT_EQ(chosen, kernels_reading(p.plan, "Kc")) << path;
  }
  MpkProgramOptions o;
  o.platform = MpkPlatform::emulation;
  MpkProgram undeclared = prepare_megakernel(undeclared_decoder(), o);
  EXPECT_TRUE(undeclared.options.mpk.data_dependent.empty());
}

TEST(MpkDriver, CliPrintsTheTaskGraphAfterTheNamedStep) {
  const std::string out = testing::TempDir() + "/mpk_print_after";
  auto [rc, log] = test::run_weft("mpk compile " + test::source_path("tests/golden/mpk/fork.weft") +
                                  " --workers 3 -o " + out + " --print-after deps");
  ASSERT_EQ(rc, 0) << log;
  EXPECT_EQ(log.find("tgraph fork workers=0 dispatch=aot"), 0u) << log;
  EXPECT_NE(log.find("wrote " + out + "/fork.tgraph"), std::string::npos) << log;
  auto [rc2, log2] =
      test::run_weft("mpk compile " + test::source_path("tests/golden/mpk/fork.weft") + " -o " +
                     out + " --print-after nonsense");
  EXPECT_EQ(rc2, 1) << log2;
  EXPECT_NE(log2.find("unknown MPK pass 'nonsense' (passes: decompose, deps"), std::string::npos)
      << log2;
}

}  // namespace
}  // namespace weft
