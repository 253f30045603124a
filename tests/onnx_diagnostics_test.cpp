// What a user meets with a model weft cannot take as it is: every unsupported operator type listed
// in one run, weights in external data files (and hostile paths to them refused), and files that
// are empty, truncated or directories: each a UserError with exit 1 (issue 29).
#ifdef WEFT_HAVE_ONNX
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "driver/onnx_run.h"
#include "onnx/import.h"
#include "tests/onnx_model_builder.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

namespace fs = std::filesystem;
using test::ModelBuilder;

std::string import_error(const std::string& path) {
  try {
    import_onnx(path);
  } catch (const UserError& e) {
    return e.loc().str() + ": " + e.message();
  }
  return "no error";
}

// A fresh directory of its own per test: external data is resolved against the model's folder.
fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("weft_onnx_diag_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// y = x + w, w = [1, 2, 3] kept in an external file at `location` (offset/length when given).
ModelBuilder external_model(const std::string& location, const std::string& offset = "",
                            const std::string& length = "") {
  ModelBuilder b;
  b.input("x", {int64_t{3}});
  b.initializer("w", {3}, {});
  onnx::TensorProto& w = b.last_initializer();
  w.clear_float_data();
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  auto entry = [&](const char* key, const std::string& value) {
    if (value.empty()) return;
    auto* kv = w.add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  };
  entry("location", location);
  entry("offset", offset);
  entry("length", length);
  b.node("Add", {"x", "w"}, {"y"}, "add_w");
  b.output("y");
  return b;
}

TEST(OnnxDiagnostics, EveryUnsupportedOperatorTypeIsListedWithCountAndFirstNode) {
  ModelBuilder b(13);
  b.input("x", {int64_t{2}, int64_t{3}});
  b.initializer("g", {3}, {1, 1, 1});
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("NonZero", {"r"}, {"n1"}, "/attn/NonZero");
  b.node("Trilu", {"r"}, {"c"}, "/mask/Trilu");
  b.node("NonZero", {"c"}, {"n2"}, "/attn/NonZero_1");
  b.node("LayerNormalization", {"r", "g"}, {"ln"}, "/ln");  // from opset 17
  b.node("Add", {"ln", "c"}, {"y"}, "add");
  b.output("y");
  std::string e = import_error(b.write("unsupported.onnx"));
  EXPECT_NE(e.find("3 operator types are not supported by weft (4 nodes;"), std::string::npos) << e;
  EXPECT_NE(e.find("\n  Trilu: 1 node, first node 2 '/mask/Trilu'"), std::string::npos) << e;
  EXPECT_NE(e.find("\n  NonZero: 2 nodes, first node 1 '/attn/NonZero'\n"), std::string::npos) << e;
  EXPECT_NE(e.find("\n  LayerNormalization: 1 node, first node 4 '/ln' (operator "
                   "'LayerNormalization' is supported, but not at opset 13"),
            std::string::npos)
      << e;

  // The CLI's check says the same, with exit 1.
  auto [code, out] = test::run_weft("model check '" + b.write("unsupported.onnx") + "'");
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("NonZero: 2 nodes"), std::string::npos) << out;
  EXPECT_NE(out.find("Trilu: 1 node"), std::string::npos) << out;
}

TEST(OnnxDiagnostics, ExternalDataBesideTheModelLoads) {
  fs::path dir = fresh_dir("external");
  // Two tensors in one file, as PyTorch writes them: the second at an offset.
  write_file(dir / "m.onnx.data", floats({9, 9}) + floats({1, 2, 3}));
  std::string path = (dir / "m.onnx").string();
  write_file(path, external_model("m.onnx.data", "8", "12").bytes());
  ImportedModel m = import_onnx(path);
  ASSERT_EQ(m.weights.size(), 1u);
  EXPECT_EQ(m.weights.begin()->second.data, (std::vector<double>{1, 2, 3}));
  auto out = run_imported(m, {{"x", Tensor<double>({3}, {10, 20, 30})}}, "test");
  EXPECT_EQ(out.at("y").data, (std::vector<double>{11, 22, 33}));

  // No length: to the end of the file; a subfolder of the model's folder is fine.
  fs::create_directories(dir / "weights");
  write_file(dir / "weights" / "w.bin", floats({4, 5, 6}));
  write_file(path, external_model("weights/./w.bin").bytes());
  EXPECT_EQ(import_onnx(path).weights.begin()->second.data, (std::vector<double>{4, 5, 6}));
}

TEST(OnnxDiagnostics, HostileOrBrokenExternalDataIsRefusedClearly) {
  fs::path dir = fresh_dir("hostile");
  fs::create_directories(dir / "sub");
  write_file(dir / "ok.data", floats({1, 2, 3}));
  fs::create_symlink("/etc/passwd", dir / "link.data");
  fs::create_directories(dir / "adir");
  struct Case {
    std::string location, offset, length, want;
  };
  const std::vector<Case> cases = {
      {"../../etc/passwd", "", "", "outside the model's directory"},
      {"sub/../../ok.data", "", "", "outside the model's directory"},
      {"/etc/passwd", "", "", "by the absolute path '/etc/passwd'"},
      {"link.data", "", "", "a link to '/etc/passwd' outside the model's directory"},
      {"missing.data", "", "", "'missing.data', which does not exist"},
      {"adir", "", "", "'adir', which is not a regular file"},
      {"ok.data", "8", "12", "asks for bytes 8 to 20 of its external data file"},
      {"ok.data", "-4", "", "that is not a byte count"},
      {"ok.data", "0", "8", "holds 8 bytes of raw data for 3 elements"},
      {"", "", "", "keeps its data in an external file but names none"},
  };
  std::string path = (dir / "sub" / "m.onnx").string();
  write_file(dir / "sub" / "ok.data", floats({1, 2, 3}));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.location);
    // Models one level down, so that `..` once is inside the test's folder but outside the model's.
    fs::path p =
        c.location == "link.data" || c.location == "adir" ? dir / "m.onnx" : fs::path(path);
    write_file(p, external_model(c.location, c.offset, c.length).bytes());
    std::string e = import_error(p.string());
    EXPECT_NE(e.find(p.string() + ": initializer 'w' "), std::string::npos) << e;
    EXPECT_NE(e.find(c.want), std::string::npos) << e;
  }
  // The CLI: exit 1 and the message, never a read of the file.
  write_file(path, external_model("../../etc/passwd").bytes());
  auto [code, out] = test::run_weft("model check '" + path + "'");
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("outside the model's directory"), std::string::npos) << out;
}

TEST(OnnxDiagnostics, EmptyTruncatedAndDirectoryModelFilesExitOne) {
  fs::path dir = fresh_dir("files");
  write_file(dir / "empty.wmod", "");
  write_file(dir / "syms_only.wmod", "# a module without functions\nsym n\n");
  write_file(dir / "cut.wmod", "sym n\nfn main(x: f32[n]) -> f32[n] {\n  y = ex");
  write_file(dir / "empty.onnx", "");
  ModelBuilder good;
  good.input("x", {int64_t{2}});
  good.node("Relu", {"x"}, {"y"});
  good.output("y");
  std::string bytes = good.bytes();
  write_file(dir / "cut.onnx", bytes.substr(0, bytes.size() / 2));
  fs::create_directories(dir / "model.onnx");
  fs::create_directories(dir / "model.wmod");
  struct Case {
    std::string file, want;
  };
  const std::vector<Case> cases = {
      {"empty.wmod", "empty.wmod:1:1: error: the module defines no function"},
      {"syms_only.wmod", "syms_only.wmod:3:1: error: the module defines no function"},
      {"cut.wmod", "cut.wmod:3:"},
      {"empty.onnx", "empty.onnx: error: "},
      {"cut.onnx", "cut.onnx: error: not an ONNX model"},
      {"model.onnx", "model.onnx: error: is a directory, not a file"},
      {"model.wmod", "model.wmod: error: is a directory, not a file"},
      {"absent.wmod", "absent.wmod: error: cannot open the file: it does not exist"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    for (const char* cmd : {"model check", "model print"}) {
      auto [code, out] = test::run_weft(std::string(cmd) + " '" + (dir / c.file).string() + "'");
      EXPECT_EQ(code, 1) << out;
      EXPECT_NE(out.find(c.want), std::string::npos) << out;
      EXPECT_EQ(out.find("ok:"), std::string::npos) << out;
    }
  }
}

}  // namespace
}  // namespace weft
#endif
