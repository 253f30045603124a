// A ModelProto built with protobuf's API for the ONNX import tests (tests/onnx_*_test.cpp): graph
// inputs and outputs, initializers, nodes with attributes, serialized or written to a file.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "onnx/import.h"

namespace weft::test {

using Dim = std::variant<int64_t, std::string>;

// A ModelProto under construction.
class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 17) {
    model_.set_ir_version(8);
    auto* os = model_.add_opset_import();
    os->set_domain("");
    os->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  void input(const std::string& name, const std::vector<Dim>& dims,
             int elem = onnx::TensorProto::FLOAT) {
    value_info(model_.mutable_graph()->add_input(), name, dims, elem);
  }
  void output(const std::string& name, int elem = onnx::TensorProto::FLOAT) {
    auto* vi = model_.mutable_graph()->add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  }
  void initializer(const std::string& name, const std::vector<int64_t>& dims,
                   const std::vector<double>& values, int elem = onnx::TensorProto::FLOAT) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    for (int64_t d : dims) t->add_dims(d);
    for (double v : values) {
      if (elem == onnx::TensorProto::INT64)
        t->add_int64_data(static_cast<int64_t>(v));
      else
        t->add_float_data(static_cast<float>(v));
    }
  }
  onnx::TensorProto& last_initializer() {
    auto* g = model_.mutable_graph();
    return *g->mutable_initializer(g->initializer_size() - 1);
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in,
                        const std::vector<std::string>& out, const std::string& name = "") {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + std::to_string(model_.graph().node_size()) : name);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return *n;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  std::string bytes() const { return model_.SerializeAsString(); }
  ImportedModel import(const OnnxImportOptions& options = {}) const {
    return import_onnx_bytes(bytes(), "test.onnx", options);
  }
  // Writes the model to a fresh file under the test's temporary folder.
  std::string write(const std::string& name) const {
    std::string path = (std::filesystem::temp_directory_path() / ("weft_onnx_" + name)).string();
    std::ofstream(path, std::ios::binary) << bytes();
    return path;
  }

 private:
  static void value_info(onnx::ValueInfoProto* vi, const std::string& name,
                         const std::vector<Dim>& dims, int elem) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* shape = tt->mutable_shape();
    for (const Dim& d : dims) {
      auto* dim = shape->add_dim();
      if (auto* v = std::get_if<int64_t>(&d))
        dim->set_dim_value(*v);
      else if (!std::get<std::string>(d).empty())
        dim->set_dim_param(std::get<std::string>(d));
    }
  }
  onnx::ModelProto model_;
};

}  // namespace weft::test
