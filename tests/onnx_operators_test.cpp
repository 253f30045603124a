// The declared ONNX operator list (onnx/operators.h, `weft onnx-ops`): the converter table as
// data, which scripts/onnx_node_tests.py reads to choose the node tests it holds weft to.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "onnx/import.h"
#include "onnx/operators.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

TEST(OnnxOperators, SortedUniqueWithOpsetRanges) {
  std::vector<OnnxOperator> ops = onnx_operators();
  if (!onnx_supported()) {
    EXPECT_TRUE(ops.empty());
    return;
  }
  ASSERT_FALSE(ops.empty());
  std::set<std::string> names;
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_TRUE(names.insert(ops[i].op_type).second) << ops[i].op_type << " listed twice";
    if (i > 0) {
      EXPECT_LT(ops[i - 1].op_type, ops[i].op_type);
    }
    EXPECT_GE(ops[i].min_opset, 1) << ops[i].op_type;
    EXPECT_LE(ops[i].min_opset, ops[i].max_opset) << ops[i].op_type;
  }
  // The transformer and CNN sets of issue 15 are declared.
  for (const char* op : {"MatMul", "Softmax", "LayerNormalization", "Reshape", "Conv"})
    EXPECT_TRUE(names.count(op)) << op;
}

TEST(OnnxOperators, CliPrintsTheTableOneOperatorALine) {
  auto [rc, text] = test::run_weft("onnx-ops");
  if (!onnx_supported()) {
    EXPECT_EQ(rc, 1) << text;
    EXPECT_NE(text.find("without ONNX support"), std::string::npos) << text;
    return;
  }
  ASSERT_EQ(rc, 0) << text;
  std::ostringstream want;
  for (const OnnxOperator& op : onnx_operators())
    want << op.op_type << " " << op.min_opset << " " << op.max_opset << "\n";
  EXPECT_EQ(text, want.str());
}

}  // namespace
}  // namespace weft
