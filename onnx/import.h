// ONNX import: an ONNX model file (ModelProto) to a model-IR Module with one function `main`,
// plus the weights its initializers hold (docs/onnx.md). Built only with libonnx-dev and
// protobuf (WEFT_HAVE_ONNX); otherwise every entry is a UserError saying so.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/module.h"

namespace weft {

struct OnnxImportOptions {
  // Upper bounds of the symbolic variables made from dim_params (by dim_param name) and of the
  // fresh variables of unnamed dynamic dims (by their generated name). Others get
  // `default_bound`.
  std::map<std::string, int64_t> bounds;
  int64_t default_bound = 4096;
  // Graph inputs whose values are fixed now (by ONNX name): they become constants, so shape
  // arithmetic on them folds (ONNX's node tests feed shapes and axes as inputs).
  std::map<std::string, Tensor<double>> known_inputs;
  // Shapes of the graph inputs a run will be given (by ONNX name): a dynamic dim's variable that
  // `bounds` does not bound takes its value here as its bound, so memory is planned for these
  // inputs, not for `default_bound`; a bound below the value is a UserError naming the dim.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // The memory the weights must fit in (bytes); 0: the memory this process may use. A model
  // whose weights cannot fit is refused before they are read.
  int64_t memory_limit_bytes = 0;
};

// An ONNX value name and the .wmod name it became (names that are not identifiers are
// sanitized).
struct OnnxName {
  std::string onnx;
  std::string wmod;
};

struct ImportedModel {
  Module module;  // one function, `main`, deduced and checked
  // main's parameters: first the graph inputs (not initializers) in graph order, then one per
  // weight (an initializer, or a folded constant a run-time operator reads) in `weights` order.
  std::vector<OnnxName> inputs;
  // Every graph input that is not an initializer, in graph order (those in `inputs` and the
  // known inputs of the options).
  std::vector<std::string> graph_inputs;
  std::map<std::string, Tensor<double>> weights;  // by parameter name
  // The graph outputs in order: main returns their tuple (a single output: the tensor itself).
  std::vector<OnnxName> outputs;
  // ONNX elem_type (TensorProto::DataType) of each output, as declared by the graph.
  std::vector<int> output_elem_types;
  // What the import decided on its own that the user should hear (a dynamic dim's bound narrowed
  // to what the model allows), one sentence each, for the caller to print.
  std::vector<std::string> notes;
};

// Whether this weft was built with ONNX support.
bool onnx_supported();

// Reads and converts the model at `path`. A dynamic dim bounded by `default_bound` that the model
// itself limits (a position table of 64 rows read at `seq`) gets the largest bound the model
// allows, said in `notes`. Every defect of the file or the graph (unreadable,
// not a ModelProto, an operator outside the converter table or its opset range, a missing
// input, shapes that contradict each other) is a UserError naming `path` and, where there is
// one, the node (name and op_type).
ImportedModel import_onnx(const std::string& path, const OnnxImportOptions& options = {});
// The same from serialized ModelProto bytes (`path` names them in errors).
ImportedModel import_onnx_bytes(const std::string& bytes, const std::string& path,
                                const OnnxImportOptions& options = {});

// What a model file holds, read without converting the graph: the graph inputs that are not
// initializers (in order) and the distinct op_types of its nodes (sorted).
struct OnnxGraphInfo {
  std::vector<std::string> graph_inputs;
  std::vector<std::string> op_types;
  // ONNX elem_type (TensorProto::DataType) the graph declares for each graph input and output
  // (0 where it declares none).
  std::vector<int> input_elem_types, output_elem_types;
};
OnnxGraphInfo onnx_graph_info(const std::string& path);

// A node-test directory's test_data_set_N: input_K.pb / output_K.pb TensorProto files, as
// arrays (by file order) with the names their protos give.
struct OnnxTensorFile {
  std::string name;
  Tensor<double> tensor;
  int elem_type = 1;
  bool integral = false;  // an integer or bool type
};
std::vector<OnnxTensorFile> read_onnx_tensor_files(const std::string& dir, const char* prefix);
// `file` read as the graph declares its value: ONNX's older test data stores bfloat16 tensors as
// UINT16 bit patterns, which become the bfloat16 values when the graph says BFLOAT16 (16).
OnnxTensorFile as_declared(OnnxTensorFile file, int declared_elem_type);

// A module file of either kind: a .onnx file is imported (weights into `weights`), anything
// else parsed as .wmod. The one place the CLI's loaders recognise .onnx.
bool is_onnx_path(const std::string& path);

}  // namespace weft
