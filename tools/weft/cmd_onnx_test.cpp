// `weft onnx-test DIR...`: ONNX node-test directories (model.onnx, test_data_set_N) run through
// the importer and the model VM, one line per test (docs/onnx.md).
#include <fmt/format.h>

#include <iostream>
#include <map>

#include "driver/onnx_run.h"
#include "tools/weft/command.h"

namespace {

weft::cli::Register reg(
    "onnx-test", "Run ONNX node-test directories and compare with their reference outputs",
    [](CLI::App& sub) {
      auto dirs = std::make_shared<std::vector<std::string>>();
      auto rtol = std::make_shared<double>(1e-3);
      auto atol = std::make_shared<double>(1e-7);
      sub.add_option("DIR", *dirs, "node-test directories (model.onnx, test_data_set_N/)")
          ->required();
      sub.add_option("--rtol", *rtol, "relative tolerance (default 1e-3)");
      sub.add_option("--atol", *atol, "absolute tolerance (default 1e-7)");
      auto by_op = std::make_shared<bool>(false);
      sub.add_flag("--by-op", *by_op,
                   "end with passed/total per op_type (over the tests whose model holds it)");
      return [=]() -> int {
        if (!weft::onnx_supported())
          throw weft::UserError("weft was built without ONNX support (docs/onnx.md)");
        int passed = 0;
        std::map<std::string, std::pair<int, int>> per_op;  // op_type -> passed, total
        for (const std::string& dir : *dirs) {
          weft::NodeTestResult r = weft::run_node_test(dir, {}, *rtol, *atol);
          passed += r.passed;
          for (const std::string& op : r.op_types) {
            per_op[op].first += r.passed;
            ++per_op[op].second;
          }
          if (r.passed)
            std::cout << fmt::format("PASS {} ({} data sets, max abs error {:.3g})\n", r.name,
                                     r.data_sets, r.max_abs_error);
          else
            std::cout << fmt::format("FAIL {}: {}\n", r.name, r.message);
        }
        if (*by_op)
          for (const auto& [op, counts] : per_op)
            std::cout << fmt::format("op {}: {}/{}\n", op, counts.first, counts.second);
        std::cout << fmt::format("{} of {} passed\n", passed, dirs->size());
        return passed == static_cast<int>(dirs->size()) ? 0 : 1;
      };
    });

}  // namespace
