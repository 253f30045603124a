// The model compile as a named step list (driver/compile_model.h): the module after each step,
// and `--print-after STEP` on the CLI for models (weft compile, weft model print) and for the
// lowering passes of a µGraph (weft compile FILE --print-after PASS).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "driver/compile_model.h"
#include "lower/pipeline.h"
#include "model/expand.h"
#include "model/parser.h"
#include "model/printer.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

const char* const kModel = "tests/model/tiny_mlp.wmod";

ModelCompileOptions unsearched(const std::string& stop_after) {
  ModelCompileOptions o;
  o.bindings = {{{"b", 2}, {"n", 4}}};
  o.search.target = "cpu";
  o.search_regions = false;
  o.stop_after = stop_after;
  return o;
}

TEST(ModelCompileSteps, TheStepsInOrder) {
  EXPECT_EQ(model_compile_steps(),
            (std::vector<std::string>{"expand", "rewrite", "fold", "specialize", "refold", "fuse",
                                      "partition", "superoptimize", "replace"}));
}

TEST(ModelCompileSteps, EachStepLeavesTheModuleItsTextShows) {
  SymProver prover;
  const Module m = load_module(test::source_path(kModel), prover);
  const std::string expanded = print_module(expand_composites(m, prover));
  EXPECT_EQ(compile_model(m, prover, unsearched("expand")).step_text, expanded);
  const std::string specialized = compile_model(m, prover, unsearched("specialize")).step_text;
  EXPECT_NE(specialized, expanded);
  // Partition leaves the module as it is and lists its regions as comments, so it still parses.
  const std::string partitioned = compile_model(m, prover, unsearched("partition")).step_text;
  EXPECT_EQ(partitioned.rfind(specialized, 0), 0u);
  EXPECT_NE(partitioned.find("\n# regions"), std::string::npos) << partitioned;
  SymProver again;
  EXPECT_NO_THROW(parse_module(partitioned, "partitioned.wmod", again));
  // The last step's text is the compiled module's.
  const ModelCompileResult whole = compile_model(m, prover, unsearched(""));
  EXPECT_TRUE(whole.step_text.empty());
  EXPECT_EQ(compile_model(m, prover, unsearched("replace")).step_text, print_module(whole.module));
}

TEST(ModelCompileSteps, AnUnknownStepIsAUserErrorNamingTheSteps) {
  SymProver prover;
  const Module m = load_module(test::source_path(kModel), prover);
  try {
    compile_model(m, prover, unsearched("lower"));
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(
        e.message().find(
            "expand, rewrite, fold, specialize, refold, fuse, partition, superoptimize, replace"),
        std::string::npos)
        << e.message();
  }
}

TEST(ModelCompileSteps, CliPrintsTheModuleAfterAStepAndWritesNothing) {
  const std::string model = test::source_path(kModel);
  auto [rc, out] =
      // --rewrite none: the library call below leaves the rewrite step off, as a baseline does.
      test::run_weft("compile " + model +
                     " --bind b=2,n=4 --no-cache --rewrite none --print-after specialize");
  ASSERT_EQ(rc, 0) << out;
  SymProver prover;
  const Module m = load_module(model, prover);
  EXPECT_EQ(out, compile_model(m, prover, unsearched("specialize")).step_text);
  // The steps before the search through `weft model print` too.
  auto [rc2, out2] = test::run_weft("model print " + model + " --print-after expand");
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_EQ(out2, print_module(expand_composites(m, prover)));
  auto [rc3, out3] = test::run_weft("model print " + model + " --print-after superoptimize");
  EXPECT_EQ(rc3, 1) << out3;
  EXPECT_NE(out3.find("weft compile MODEL --print-after superoptimize"), std::string::npos) << out3;
}

TEST(ModelCompileSteps, CliPrintsTheLoweringPlanAfterAPass) {
  const std::string program = test::source_path("tests/golden/lower/gated_mlp.fused.weft");
  for (const std::string pass : {"schedule", "build"}) {
    auto [rc, out] = test::run_weft("compile " + program + " --target cpu --print-after " + pass);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(out, test::read_text(test::source_path("tests/golden/lower/gated_mlp.fused.cpu." +
                                                     pass + ".plan")));
  }
  auto [rc, out] = test::run_weft("compile " + program + " --print-after nope");
  EXPECT_EQ(rc, 1) << out;
}

}  // namespace
}  // namespace weft
