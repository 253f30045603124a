// Imported ONNX models on the model VM, and ONNX node-test directories against their references.
#include "driver/onnx_run.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "exec/run_io.h"
#include "exec/vm.h"

namespace weft {

std::map<std::string, Tensor<double>> run_imported(
    const ImportedModel& m, const std::map<std::string, Tensor<double>>& inputs,
    const std::string& where, const VmOptions& options) {
  const Function& fn = function_to_run(m.module, "main", SourceLoc{where});
  std::map<std::string, std::string> onnx_of;  // wmod parameter -> ONNX input
  for (const OnnxName& n : m.inputs) onnx_of[n.wmod] = n.onnx;
  std::vector<VmValue> args;
  for (const Param& p : fn.params) {
    const Tensor<double>* t = nullptr;
    std::string what;
    if (auto w = m.weights.find(p.name); w != m.weights.end()) {
      t = &w->second;
      what = fmt::format("weight '{}'", p.name);
    } else {
      const std::string& onnx = onnx_of.at(p.name);
      auto it = inputs.find(onnx);
      if (it == inputs.end())
        throw UserError(SourceLoc{where}, fmt::format("no array for the model input '{}'", onnx));
      t = &it->second;
      what = fmt::format("input '{}'", onnx);
    }
    args.push_back(argument_value(p, NpyArray{*t, false}, what, SourceLoc{where}));
  }
  Vm vm(m.module, options);
  VmValue result = vm.run("main", args);
  std::map<std::string, Tensor<double>> out;
  if (m.outputs.size() == 1) {
    out[m.outputs[0].onnx] = *result.tensor();
  } else {
    const VmTuple& t = *result.tuple();
    for (size_t i = 0; i < m.outputs.size(); ++i) out[m.outputs[i].onnx] = *t[i].tensor();
  }
  return out;
}

std::map<std::string, NpyElement> imported_output_elements(const ImportedModel& m) {
  const Function& fn = function_to_run(m.module, "main", SourceLoc{});
  std::map<std::string, NpyElement> out;
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    const MType& t = m.outputs.size() == 1 ? fn.ret : fn.ret.fields.at(i);
    if (t.is_tensor()) out[m.outputs[i].onnx] = npy_element(t.dtype);
  }
  return out;
}

ImportedModel import_for_run(const std::string& path, const OnnxImportOptions& options,
                             const std::map<std::string, Tensor<double>>& inputs,
                             const std::vector<std::string>& integral) {
  // 0-d tensors cannot reach the VM's operators (their µGraphs need a dim): fixed from the start.
  OnnxImportOptions scalars = options;
  for (const auto& [name, t] : inputs) {
    if (t.shape.empty()) scalars.known_inputs[name] = t;
    scalars.input_shapes[name] = t.shape;
  }
  try {
    return import_onnx(path, scalars);
  } catch (const UserError&) {
    if (integral.empty() && inputs.empty()) throw;
  }
  OnnxImportOptions fixed = scalars;
  for (const std::string& name : integral)
    if (auto it = inputs.find(name); it != inputs.end()) fixed.known_inputs[name] = it->second;
  try {
    return import_onnx(path, fixed);
  } catch (const UserError&) {
  }
  // Scalars too (Clip's bounds, Pow's exponent as inputs).
  for (const auto& [name, t] : inputs)
    if (t.numel() == 1) fixed.known_inputs[name] = t;
  return import_onnx(path, fixed);
}

std::map<std::string, Tensor<double>> onnx_inputs_from_pb(const OnnxGraphInfo& graph,
                                                          const std::string& dir,
                                                          std::vector<std::string>* integral) {
  std::vector<OnnxTensorFile> files = read_onnx_tensor_files(dir, "input");
  if (files.size() != graph.graph_inputs.size())
    throw UserError(SourceLoc{dir}, fmt::format("{} input_N.pb files for a model of {} inputs",
                                                files.size(), graph.graph_inputs.size()));
  std::map<std::string, Tensor<double>> out;
  for (size_t i = 0; i < files.size(); ++i) {
    OnnxTensorFile f = as_declared(std::move(files[i]), graph.input_elem_types[i]);
    if (integral && f.integral) integral->push_back(graph.graph_inputs[i]);
    out[graph.graph_inputs[i]] = std::move(f.tensor);
  }
  return out;
}

NodeTestResult run_node_test(const std::string& dir, const OnnxImportOptions& options, double rtol,
                             double atol) {
  NodeTestResult r;
  r.name = std::filesystem::path(dir).filename().string();
  if (r.name.empty()) r.name = std::filesystem::path(dir).parent_path().filename().string();
  try {
    const std::string model = dir + "/model.onnx";
    OnnxGraphInfo info = onnx_graph_info(model);
    r.op_types = info.op_types;
    for (int set = 0;; ++set) {
      std::string data = fmt::format("{}/test_data_set_{}", dir, set);
      if (!std::filesystem::is_directory(data)) break;
      std::vector<std::string> integral;
      auto inputs = onnx_inputs_from_pb(info, data, &integral);
      ImportedModel m = import_for_run(model, options, inputs, integral);
      auto got = run_imported(m, inputs, data);
      std::vector<OnnxTensorFile> want = read_onnx_tensor_files(data, "output");
      if (want.size() != m.outputs.size())
        throw UserError(SourceLoc{data}, fmt::format("{} output_N.pb files for {} outputs",
                                                     want.size(), m.outputs.size()));
      for (size_t i = 0; i < want.size(); ++i) {
        const Tensor<double>& g = got.at(m.outputs[i].onnx);
        const Tensor<double> w =
            as_declared(want[i], i < info.output_elem_types.size() ? info.output_elem_types[i] : 0)
                .tensor;
        if (g.shape != w.shape)
          throw UserError(SourceLoc{data},
                          fmt::format("output '{}' has shape {}, expected {}", m.outputs[i].onnx,
                                      shape_str(g.shape), shape_str(w.shape)));
        for (size_t k = 0; k < w.data.size(); ++k) {
          double err = std::fabs(g.data[k] - w.data[k]);
          bool same_special = (std::isnan(g.data[k]) && std::isnan(w.data[k])) ||
                              (std::isinf(w.data[k]) && g.data[k] == w.data[k]);
          if (same_special) continue;
          if (!(err <= atol + rtol * std::fabs(w.data[k]))) {
            r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
            throw UserError(SourceLoc{data},
                            fmt::format("output '{}' element {}: got {}, expected {}",
                                        m.outputs[i].onnx, k, g.data[k], w.data[k]));
          }
          r.max_abs_error = std::max(r.max_abs_error, err);
        }
      }
      ++r.data_sets;
    }
    if (r.data_sets == 0) throw UserError(SourceLoc{dir}, "no test_data_set_N directory");
    r.passed = true;
  } catch (const UserError& e) {
    r.message = e.loc().str().empty() ? e.message() : e.loc().str() + ": " + e.message();
  }
  return r;
}

}  // namespace weft
