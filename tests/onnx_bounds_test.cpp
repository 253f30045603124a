// Bounds of an imported model's dynamic dims (issue 29 item 4): narrowed to what the model allows
// when weft chose them (a position table read at `seq`), the caller's bound refused with the
// limit when it is too large, a run's inputs bounding the dims they give (memory planned for
// them, not for the default bound), and `weft model run` with no --bound on such a model.
#ifdef WEFT_HAVE_ONNX
#include <gtest/gtest.h>

#include <filesystem>

#include "driver/onnx_run.h"
#include "exec/npz.h"
#include "onnx/import.h"
#include "tests/onnx_model_builder.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

using test::ModelBuilder;
using V = std::vector<double>;

constexpr int64_t kPositions = 64;

// GPT-2's and BERT's position embedding as exporters write it: rows [0, seq) of a table of
// kPositions rows, added to the token embeddings of an input [batch, seq, 4].
ModelBuilder position_model() {
  ModelBuilder mb(17);
  mb.input("x", {std::string("batch"), std::string("seq"), int64_t{4}});
  V table(kPositions * 4);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.01 * static_cast<double>(i);
  mb.initializer("pos_table", {kPositions, 4}, table);
  mb.initializer("zero", {1}, {0}, onnx::TensorProto::INT64);
  mb.initializer("one", {1}, {1}, onnx::TensorProto::INT64);
  mb.node("Shape", {"x"}, {"sx"});
  mb.node("Gather", {"sx", "one"}, {"seq_len"});
  mb.node("Slice", {"pos_table", "zero", "seq_len", "zero"}, {"pos"}, "position_slice");
  mb.node("Add", {"x", "pos"}, {"y"});
  mb.output("y");
  return mb;
}

int64_t sym_hi(const ImportedModel& m, const std::string& name) {
  for (const auto& [n, var] : m.module.syms.vars())
    if (n == name) return var.hi().value_or(-1);
  ADD_FAILURE() << "no variable " << name;
  return -1;
}

TEST(OnnxBounds, ADimTheModelLimitsIsNarrowedToItsLimitAndSaidInANote) {
  ImportedModel m = position_model().import();
  EXPECT_EQ(sym_hi(m, "seq"), kPositions);
  EXPECT_EQ(sym_hi(m, "batch"), OnnxImportOptions{}.default_bound);
  ASSERT_EQ(m.notes.size(), 1u);
  const std::string& note = m.notes[0];
  EXPECT_NE(note.find("position_slice"), std::string::npos) << note;
  EXPECT_NE(note.find("the model allows seq <= 64 at most"), std::string::npos) << note;
  EXPECT_NE(note.find("seq is bounded by 64, not 4096 (--bound seq=N for less)"), std::string::npos)
      << note;
  // The narrowed model runs at the limit, and the run says what it computed.
  Tensor<double> x({1, kPositions, 4}, V(kPositions * 4, 1.0));
  auto out = run_imported(m, {{"x", x}}, "test.onnx");
  EXPECT_NEAR(out.at("y").data.back(), 1.0 + 0.01 * (kPositions * 4 - 1), 1e-6);
}

TEST(OnnxBounds, ACallersBoundAboveTheLimitIsAnErrorThatGivesTheLimit) {
  OnnxImportOptions options;
  options.bounds["seq"] = 100;
  try {
    position_model().import(options);
    ADD_FAILURE() << "a bound of 100 on a table of 64 rows was accepted";
  } catch (const UserError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("position_slice"), std::string::npos) << what;
    EXPECT_NE(what.find("seq is 100 here: give it at most 64 (--bound seq=64"), std::string::npos)
        << what;
  }
  options.bounds["seq"] = 32;  // within the limit: taken as given, nothing to note
  ImportedModel m = position_model().import(options);
  EXPECT_EQ(sym_hi(m, "seq"), 32);
  EXPECT_TRUE(m.notes.empty());
}

TEST(OnnxBounds, ARunsInputsBoundTheDimsTheyGive) {
  Tensor<double> x({2, 7, 4}, V(2 * 7 * 4, 0.5));
  ImportedModel m = import_for_run(position_model().write("bounds_run.onnx"), {}, {{"x", x}}, {});
  EXPECT_EQ(sym_hi(m, "batch"), 2);
  EXPECT_EQ(sym_hi(m, "seq"), 7);
  EXPECT_TRUE(m.notes.empty());
  EXPECT_EQ(run_imported(m, {{"x", x}}, "test.onnx").at("y").shape, (Shape{2, 7, 4}));

  // Inputs beyond what the model allows, or beyond the caller's bound, say so.
  Tensor<double> long_x({1, 80, 4}, V(80 * 4, 0.5));
  try {
    import_for_run(position_model().write("bounds_run.onnx"), {}, {{"x", long_x}}, {});
    ADD_FAILURE() << "80 positions of a table of 64 were accepted";
  } catch (const UserError& e) {
    // The bound came from the inputs: the advice is smaller inputs, not a flag.
    EXPECT_NE(std::string(e.what()).find("the inputs make seq 80: give inputs with seq at most 64"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("--bound"), std::string::npos) << e.what();
  }
  OnnxImportOptions options;
  options.bounds["batch"] = 1;
  try {
    import_for_run(position_model().write("bounds_run.onnx"), options, {{"x", x}}, {});
    ADD_FAILURE() << "a batch of 2 under --bound batch=1 was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("graph input 'x' dim 0 (batch) is 2 in the inputs given, "
                                         "above its bound 1; raise it (--bound batch=2)"),
              std::string::npos)
        << e.what();
  }
}

// A model whose weights cannot fit in memory is refused before they are read, in the file and in
// its external data (the limit stands in for a machine too small for the model).
TEST(OnnxBounds, AModelLargerThanMemoryIsRefusedBeforeItIsRead) {
  OnnxImportOptions options;
  options.memory_limit_bytes = 1024;
  try {
    position_model().import(options);
    ADD_FAILURE() << "a model of 1 KiB of weights was imported under a limit of 1 KiB";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("bytes; weft holds weights as f64 values, about"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("a model larger than memory cannot be imported"),
              std::string::npos)
        << e.what();
  }
  std::string external =
      test::source_path("examples/onnx/corpus/resnet_dynamo_dynamic_external.onnx");
  int64_t model_bytes = static_cast<int64_t>(std::filesystem::file_size(external));
  int64_t data_bytes = static_cast<int64_t>(std::filesystem::file_size(external + ".data"));
  ASSERT_GT(data_bytes, 4 * model_bytes);
  options.memory_limit_bytes = 3 * model_bytes + 3;
  try {
    import_onnx(external, options);
    ADD_FAILURE() << "external data beyond the limit was read";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("the model's external data takes"), std::string::npos)
        << e.what();
  }
  options.memory_limit_bytes = 0;
  EXPECT_NO_THROW(import_onnx(external, options));
}

// As a user first meets it: `weft model run` on the export with no --bound, at two shapes.
TEST(OnnxBounds, ModelRunNeedsNoBoundOnAModelThatLimitsItsDims) {
  std::string model = position_model().write("bounds_cli.onnx");
  for (int64_t seq : {int64_t{7}, kPositions}) {
    SCOPED_TRACE(seq);
    std::string in = (std::filesystem::temp_directory_path() / "weft_bounds_in.npz").string();
    std::string out = (std::filesystem::temp_directory_path() / "weft_bounds_out.npz").string();
    write_npz(in, {{"x", Tensor<double>({3, seq, 4}, V(static_cast<size_t>(3 * seq * 4), 1.0))}});
    auto [rc, text] =
        test::run_weft("model run " + model + " --inputs " + in + " --outputs " + out);
    EXPECT_EQ(rc, 0) << text;
    EXPECT_NE(text.find(fmt::format("y: [3, {}, 4]", seq)), std::string::npos) << text;
    NpzArrays got = read_npz(out);
    EXPECT_NEAR(got.at("y").tensor.data.back(), 1.0 + 0.01 * (seq * 4 - 1), 1e-6);
  }
  auto [rc, text] = test::run_weft("model check " + model);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("note: "), std::string::npos) << text;
  EXPECT_NE(text.find("seq is bounded by 64"), std::string::npos) << text;
}

}  // namespace
}  // namespace weft
#endif  // WEFT_HAVE_ONNX
