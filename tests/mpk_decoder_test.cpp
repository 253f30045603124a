// The Qwen3-shaped decode-step generator (testing/decoder_program.h): it reproduces the checked-in
// tiny program, its output parses and round-trips, the 0.6B shapes come out as the model has
// them, and configurations that do not divide are refused with a message.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/target.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "lower/pipeline.h"
#include "mpk/decode_layout.h"
#include "mpk/passes/add_decode_tasks.h"
#include "mpk/runtime/decode_bodies.h"
#include "mpk/runtime/megakernel_program.h"
#include "testing/decode_demo.h"
#include "testing/decoder_program.h"
#include "tests/golden.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

const Value* input_named(const Graph& g, const std::string& name) {
  for (ValueId id : g.inputs)
    if (g.value(id).name == name) return &g.value(id);
  return nullptr;
}

// The example is this generator's golden file (tests/golden.h).
TEST(MpkDecoder, GeneratorReproducesTheCheckedInTinyProgram) {
  EXPECT_TRUE(test::matches_golden(decoder_program(decoder_config("qwen3-tiny")),
                                   "examples/qwen3_tiny_decode_step.weft"));
}

TEST(MpkDecoder, TinyProgramParsesAndRoundTrips) {
  Graph g = test::load_graph_file(test::example_path("qwen3_tiny_decode_step.weft"));
  EXPECT_EQ(parse_graph(print_graph(g), "printed"), g);
  EXPECT_EQ(g.outputs.size(), 5u);  // LOGITS, then KN/VN of 2 layers
  ASSERT_NE(input_named(g, "COS"), nullptr);
  EXPECT_EQ(input_named(g, "COS")->type.shape, (Shape{1, 1, 64}));
  EXPECT_EQ(input_named(g, "Kc1")->type.shape, (Shape{2, 64, 64}));  // [Hkv, dh, T]
  EXPECT_EQ(input_named(g, "Wq0")->type.shape, (Shape{256, 256}));   // 4 heads of 64
  EXPECT_EQ(input_named(g, "EMB")->type.shape, (Shape{256, 4096}));  // [D, V]
  EXPECT_EQ(input_named(g, "Wq0")->type.dtype, DType::bf16);
}

TEST(MpkDecoder, ZeroSixBHasTheModelsShapesAndWeightBytes) {
  DecoderConfig c = decoder_config("qwen3-0.6b");
  c.cache = 256;
  Graph g = parse_graph(decoder_program(c), "qwen3-0.6b");
  EXPECT_EQ(g.outputs.size(), 1u + 2 * 28);
  EXPECT_EQ(input_named(g, "Wk27")->type.shape, (Shape{1024, 8 * 128}));
  EXPECT_EQ(input_named(g, "Wq27")->type.shape, (Shape{1024, 16 * 128}));
  EXPECT_EQ(input_named(g, "Wdown0")->type.shape, (Shape{3072, 1024}));
  EXPECT_EQ(input_named(g, "Vc3")->type.shape, (Shape{8, 256, 128}));
  int64_t bytes = 0;
  for (ValueId id : g.inputs) {
    const std::string& n = g.value(id).name;
    if (n == "X" || n == "M" || n == "COS" || n == "SIN" || n.rfind("Kc", 0) == 0 ||
        n.rfind("Vc", 0) == 0)
      continue;
    bytes += numel(g.value(id).type.shape) * dtype_bytes(g.value(id).type.dtype);
  }
  EXPECT_EQ(bytes, decoder_weight_bytes(c));
  // About 596M parameters: 1.19 GB of bf16 per step.
  EXPECT_GT(bytes, 1'150'000'000);
  EXPECT_LT(bytes, 1'250'000'000);
}

TEST(MpkDecoder, ConfigurationsThatDoNotDivideAreRefused) {
  DecoderConfig c = decoder_config("qwen3-tiny");
  c.cache = 60;  // not a multiple of 2 splits x 16 positions
  try {
    (void)decoder_program(c);
    FAIL() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cache length"), std::string::npos) << e.what();
  }
  c = decoder_config("qwen3-tiny");
  c.q_heads = 3;
  EXPECT_THROW((void)decoder_program(c), UserError);
  EXPECT_THROW((void)decoder_config("qwen3-7b"), UserError);
}

TEST(MpkDecoder, CliWritesTheProgramAndRejectsBadFlags) {
  const std::string out = testing::TempDir() + "/qwen3_cli.weft";
  auto [rc, log] = test::run_weft("mpk decoder --config qwen3-tiny -o " + out);
  ASSERT_EQ(rc, 0) << log;
  EXPECT_EQ(test::read_text(out),
            test::read_text(test::example_path("qwen3_tiny_decode_step.weft")));
  auto [rc2, log2] = test::run_weft("mpk decoder --config qwen3-tiny --cache 50 -o " + out);
  EXPECT_EQ(rc2, 1) << log2;
  EXPECT_NE(log2.find("error"), std::string::npos) << log2;
  auto [rc3, log3] = test::run_weft("mpk decoder --config qwen3-tiny --dtype f16 -o " + out);
  EXPECT_EQ(rc3, 1) << log3;
  // Kernel shapes: the generator's own for those values; refused when they do not divide.
  auto [rc4, log4] =
      test::run_weft("mpk decoder --config qwen3-tiny --tile 64 --kv-splits 4 -o " + out);
  ASSERT_EQ(rc4, 0) << log4;
  DecoderConfig c = decoder_config("qwen3-tiny");
  c.tile = 64;
  c.kv_splits = 4;
  EXPECT_EQ(test::read_text(out), decoder_program(c));
  EXPECT_NE(decoder_program(c), decoder_program(decoder_config("qwen3-tiny")));
  for (const char* bad : {"--tile 48", "--tile -1", "--kv-splits 3", "--cache-chunk 0 --tile 7"}) {
    auto [rc5, log5] =
        test::run_weft(fmt::format("mpk decoder --config qwen3-tiny {} -o {}", bad, out));
    EXPECT_EQ(rc5, 1) << bad << log5;
    EXPECT_NE(log5.find("error"), std::string::npos) << bad << log5;
  }
}

// `weft mpk unit` writes the unit `weft mpk run --on gpu` would compile: with the decode loop's
// task function only when asked; a CPU target is refused.
TEST(MpkDecoder, CliWritesThePersistentKernelsUnit) {
  const std::string example = test::example_path("qwen3_tiny_decode_step.weft");
  const std::string out = testing::TempDir() + "/qwen3_unit.cu";
  auto [rc, log] =
      test::run_weft("mpk unit " + example + " --decode-loop --workers 3 --target a100 -o " + out);
  ASSERT_EQ(rc, 0) << log;
  const ProgramPlan plan =
      lower_graph(parse_graph(test::read_text(example), example), target_by_name("a100"));
  MegakernelProgramOptions o;
  o.mpk.assign = {3, Dispatch::hybrid};
  o.mpk.data_dependent = kernels_reading(plan, "Kc");
  o.mpk.decode_on_device = true;
  const std::string unit = test::read_text(out);
  EXPECT_EQ(unit, emit_megakernel_program_unit(plan, o).unit);
  EXPECT_NE(unit.find(kDecodeTaskFunction), std::string::npos);
  auto [rc2, log2] = test::run_weft("mpk unit " + example + " -o " + out);
  ASSERT_EQ(rc2, 0) << log2;
  EXPECT_EQ(test::read_text(out).find(kDecodeTaskFunction), std::string::npos);
  auto [rc3, log3] = test::run_weft("mpk unit " + example + " --target cpu -o " + out);
  EXPECT_EQ(rc3, 1) << log3;
  EXPECT_NE(log3.find("needs a GPU target"), std::string::npos) << log3;
}

}  // namespace
}  // namespace weft
