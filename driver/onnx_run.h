// Running an imported ONNX model on the model VM with inputs and outputs named as in the ONNX
// graph, and ONNX's node-test directories (model.onnx + test_data_set_N/{input,output}_K.pb)
// compared against their reference outputs (docs/onnx.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "exec/npz.h"
#include "exec/vm.h"
#include "onnx/import.h"

namespace weft {

// Runs `m` with graph inputs by ONNX name (the weights come from `m`) on a VM with `options`;
// returns the outputs by ONNX output name. Missing inputs are a UserError at `where`.
std::map<std::string, Tensor<double>> run_imported(
    const ImportedModel& m, const std::map<std::string, Tensor<double>>& inputs,
    const std::string& where, const VmOptions& options = {});

// The NumPy element type of each output of `m` by ONNX name: its dtype's (npy_element), so integer
// and bool outputs are written as such.
std::map<std::string, NpyElement> imported_output_elements(const ImportedModel& m);

// Imports `path` for a run on `inputs`, each dynamic dim bounded by its value in them unless
// `options` bounds it (OnnxImportOptions::input_shapes: memory planned for these inputs, and a
// dim the model limits checked against them): as it is when that works, else again with the inputs
// named in `integral` fixed as constants (OnnxImportOptions::known_inputs), else with every
// one-element input fixed too: for graphs whose shapes, axes or bounds come from inputs (as
// ONNX's node tests feed them).
ImportedModel import_for_run(const std::string& path, const OnnxImportOptions& options,
                             const std::map<std::string, Tensor<double>>& inputs,
                             const std::vector<std::string>& integral);

// The inputs of test data set `dir` (input_K.pb in graph-input order) by ONNX input name, each
// read as the graph declares it (as_declared). `graph` is the model's onnx_graph_info, and
// `integral` (when given) receives the names of those whose files hold integer or bool data.
std::map<std::string, Tensor<double>> onnx_inputs_from_pb(
    const OnnxGraphInfo& graph, const std::string& dir,
    std::vector<std::string>* integral = nullptr);

struct NodeTestResult {
  std::string name;  // the directory's last component
  bool passed = false;
  int data_sets = 0;  // test_data_set_N directories run
  double max_abs_error = 0;
  std::string message;                // why it failed (an import error, a mismatch)
  std::vector<std::string> op_types;  // the model's distinct op_types (empty if unreadable)
};

// Imports DIR/model.onnx and runs every DIR/test_data_set_N (import_for_run), comparing
// each output with |got - want| <= atol + rtol |want| (ONNX's backend-test tolerance). Never throws
// for a bad model or a mismatch: the result says what happened.
NodeTestResult run_node_test(const std::string& dir, const OnnxImportOptions& options = {},
                             double rtol = 1e-3, double atol = 1e-7);

}  // namespace weft
