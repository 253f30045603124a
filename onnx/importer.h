// The ONNX importer's state shared by its entry (onnx/import.cpp) and its converter table
// (onnx/converters.cpp): what each ONNX value is at import time, and the Importer that emits
// bindings with their deduced types. Internal to onnx/; needs WEFT_HAVE_ONNX.
#pragma once

#include <onnx/onnx_pb.h>

#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/rational.h"
#include "core/tensor.h"
#include "ir/deduce_context.h"
#include "ir/ops.h"
#include "model/module.h"
#include "onnx/import.h"

namespace weft::onnx_import {

using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;

// The newest opset any converter accepts.
constexpr int kMaxOpset = 21;

bool is_integer_type(int elem);
// The model dtype a value of ONNX elem type `elem` gets: its own (u16, u32, u64 as i64), except
// that f16 and bf16 values compute as f32 (docs/onnx.md).
DType dtype_of_elem(int elem);
// The ONNX elem type of a model dtype.
int elem_of_dtype(DType dtype);
// A TensorProto's values as doubles (`what` names it in errors at `where`).
Tensor<double> tensor_from_proto(const TensorProto& t, const SourceLoc& where,
                                 const std::string& what);
// Reads the tensors of `model` that keep their data in external files (initializers, Constant
// values, subgraphs) into the tensors themselves. Each file must lie in the directory of
// `model_path` (a relative path, no `..` or link leading out); else a UserError naming the tensor.
void load_external_data(onnx::ModelProto& model, const std::string& model_path,
                        int64_t memory_limit);
// UserError at `path` unless weights of `bytes` bytes in a file fit in `memory_limit` bytes (0:
// the memory this process may use) as weft holds them: f64 values, about three times the bytes
// of f32 weights with the file's own copy. `what` opens the message ("the model file is").
void require_weights_fit(int64_t bytes, int64_t memory_limit, const std::string& path,
                         const char* what);
// A float as a short exact rational (the decimal with the fewest digits that rounds to the same
// float), so printed modules stay readable; none for infinities and NaN.
std::optional<Rational> rational_of(double d);

// What an ONNX value is at import time.
enum class VKind : uint8_t {
  constant,  // values known now (initializers, Constant, folded arithmetic)
  dims,      // a 0-d or 1-d integer tensor of symbolic values (Shape and its arithmetic)
  runtime,   // an IR value
};

struct Value {
  VKind kind = VKind::runtime;
  Tensor<double> data;  // constant
  int elem = TensorProto::FLOAT;
  std::vector<SymExpr> syms;  // dims
  bool scalar = false;        // dims: 0-d
  std::string name;           // runtime: the IR value; constant: the weight once materialized
  MType type;                 // runtime
};

Value constant_value(Tensor<double> t, int elem);
// Symbolic integers as a value: constant when every one is.
Value dims_value(std::vector<SymExpr> syms, bool scalar);
// `name` as a .wmod identifier (dots allowed unless `sym`), unique within `used`.
std::string sanitize(const std::string& name, std::set<std::string>& used, bool sym,
                     const char* fallback);

class Importer;
using ConvertFn = void (*)(Importer&);

struct Converter {
  const char* op_type;
  int min_opset;
  int max_opset;
  ConvertFn fn;
};

const std::vector<Converter>& converters();
// The converter of `node` at `opset`, or null and why there is none (an operator outside the
// table, outside its opset range, or in another domain).
std::pair<const Converter*, std::string> find_converter(const NodeProto& node, int opset);

class Importer {
 public:
  Importer(const std::string& path, const OnnxImportOptions& options)
      : path_(path), options_(options) {}

  ImportedModel run(const onnx::ModelProto& model);

  // After run() threw: a bound of one dynamic dim under which the requirement that failed holds,
  // when that requirement (a shape rule's, refuted by the prover) is over this dim alone and not
  // true at its lowest value. `user_bound`: the bound was the caller's (given or from an input's
  // shape), so it is theirs to change; otherwise weft's default, which the importer may narrow.
  struct Narrowing {
    std::string sym;    // the variable (a key of OnnxImportOptions::bounds)
    std::string dim;    // what the user calls it: the ONNX dim_param, or the variable
    int64_t value = 0;  // the largest value the requirement allows
    int64_t was = 0;    // the bound it had
    bool user_bound = false;
    bool from_inputs = false;  // the user's bound came from a run's inputs, not --bound
    SourceLoc where;
    std::string expects;
  };
  std::optional<Narrowing> narrowing() const;

  // The node being converted.
  const NodeProto& node() const { return *node_; }
  int opset() const { return opset_; }
  // Where the current node is, as a location: "FILE: node N 'NAME' (OP)" (ONNX files have no
  // lines; bindings carry it too, so deduction and VM errors name the node).
  SourceLoc node_loc() const {
    if (!node_) return SourceLoc{path_};
    return SourceLoc{
        fmt::format("{}: node {} '{}' ({})", path_, node_index_, node_->name(), node_->op_type())};
  }
  [[noreturn]] void fail(const std::string& message) const { throw UserError(node_loc(), message); }

  // Inputs: count (trailing empty names dropped), presence, and value.
  int num_inputs() const {
    int n = node_->input_size();
    while (n > 0 && node_->input(n - 1).empty()) --n;
    return n;
  }
  bool has_input(int i) const { return i < node_->input_size() && !node_->input(i).empty(); }
  const Value& in(int i) const {
    if (!has_input(i)) fail(fmt::format("needs input {}", i));
    auto it = values_.find(node_->input(i));
    if (it == values_.end())
      fail(
          fmt::format("input '{}' is not defined (no graph input, initializer or earlier node "
                      "output has that name)",
                      node_->input(i)));
    return it->second;
  }
  // Sets output i; a binding this node made takes the output's name.
  void out(int i, Value v);
  // Optional outputs beyond the first `n` must be absent: weft computes only those.
  void only_outputs(int n) const {
    for (int i = n; i < node_->output_size(); ++i)
      if (!node_->output(i).empty())
        fail(fmt::format("output {} ('{}') is not supported (inference outputs only)", i,
                         node_->output(i)));
  }

  // Attributes.
  const AttributeProto* attr(const char* name) const {
    for (const AttributeProto& a : node_->attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  int64_t attr_int(const char* name, int64_t def) const {
    const AttributeProto* a = attr(name);
    return a ? a->i() : def;
  }
  double attr_float(const char* name, double def) const {
    const AttributeProto* a = attr(name);
    return a ? a->f() : def;
  }
  std::string attr_string(const char* name, const std::string& def) const {
    const AttributeProto* a = attr(name);
    return a ? a->s() : def;
  }
  std::optional<std::vector<int64_t>> attr_ints(const char* name) const {
    const AttributeProto* a = attr(name);
    if (!a) return std::nullopt;
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  }

  // Integer values of a constant or dims input, or null when they are only known at run time.
  std::optional<std::vector<SymExpr>> ints_of(const Value& v) const {
    if (v.kind == VKind::dims) return v.syms;
    if (v.kind == VKind::constant) {
      std::vector<SymExpr> out;
      for (double d : v.data.data) {
        if (d != std::floor(d)) return std::nullopt;
        // Constants are held as doubles: beyond 2^53 only ONNX's "to the end" sentinels
        // (INT64_MAX, INT64_MIN as Slice's ends) occur, read saturated to ±(2^63 - 1).
        if (std::fabs(d) > 9e15) {
          constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
          out.emplace_back(d > 0 ? kMax : -kMax);
          continue;
        }
        out.emplace_back(static_cast<int64_t>(d));
      }
      return out;
    }
    return std::nullopt;
  }
  std::vector<SymExpr> ints_input(int i, const char* what) const {
    auto v = ints_of(in(i));
    if (!v)
      fail(
          fmt::format("{} (input {}) must be known at import time (a constant or shape "
                      "arithmetic), not computed at run time",
                      what, i));
    return *v;
  }
  std::vector<int64_t> const_ints_input(int i, const char* what) const {
    std::vector<int64_t> out;
    for (const SymExpr& s : ints_input(i, what)) {
      auto c = s.as_constant();
      if (!c) fail(fmt::format("{} (input {}) must be constant, not {}", what, i, s.str()));
      out.push_back(*c);
    }
    return out;
  }

  // The run-time IR value of `v` (constants become weights, dims a dims_tensor).
  std::pair<std::string, MType> runtime(const Value& v);
  std::string rt(int i) { return runtime(in(i)).first; }
  // Emits `var = callee(args, attrs)` and returns the run-time value it binds.
  Value emit(CallKind kind, const std::string& callee, const std::vector<std::string>& args,
             MAttrs attrs = {});
  Value op(const std::string& callee, const std::vector<std::string>& args, MAttrs attrs = {}) {
    WEFT_CHECK(op_by_name(callee), "the importer emits an operator weft lacks: {}", callee);
    return emit(CallKind::op, callee, args, std::move(attrs));
  }
  // Run-time value `v` as a value of ONNX type `elem` (dtype_of_elem): itself when its dtype is
  // that already, else a cast.
  Value as_elem(const Value& v, int elem) {
    const DType want = dtype_of_elem(elem);
    if (!v.type.is_tensor() || v.type.dtype == want) {
      Value same = v;
      same.elem = elem;
      return same;
    }
    Value c = op("cast", {v.name}, {{"to", SymExpr(int64_t{elem_of_dtype(want)})}});
    c.elem = elem;
    return c;
  }
  const MType& type_of(const std::string& name) const { return types_.at(name); }
  // The run-time IR value `name` as a Value: its type, and the ONNX type of its dtype.
  Value value_of(const std::string& name) const {
    Value v;
    v.name = name;
    v.type = type_of(name);
    if (v.type.is_tensor()) v.elem = elem_of_dtype(v.type.dtype);
    return v;
  }
  // Decides conditions on symbolic dims while folding (Equal of a shape vector and -1).
  SymProver& prover() { return prover_; }
  std::vector<SymExpr> dims(const std::string& name) const {
    const MType& t = type_of(name);
    if (!t.dims) fail(fmt::format("needs the dims of '{}', but only its rank is known", name));
    return *t.dims;
  }
  int rank(const std::string& name) const { return type_of(name).rank; }
  std::string reshape(const std::string& x, const std::vector<SymExpr>& shape) {
    if (type_of(x).dims && *type_of(x).dims == shape) return x;
    return op("reshape", {x}, {{"shape", shape}}).name;
  }
  // Prepends size-1 dims to make `x` rank `r` (numpy broadcasting's alignment).
  std::string to_rank(const std::string& x, int r) {
    auto d = dims(x);
    if (static_cast<int>(d.size()) >= r) return x;
    d.insert(d.begin(), static_cast<size_t>(r) - d.size(), SymExpr(1));
    return reshape(x, d);
  }
  int64_t axis(int64_t a, int r) const {
    if (a < -r || a >= r) fail(fmt::format("axis {} is out of range for rank {}", a, r));
    return a < 0 ? a + r : a;
  }

  Module module_;
  std::map<std::string, Tensor<double>> weights_;
  std::vector<OnnxName> inputs_;
  std::vector<std::string> graph_inputs_;
  // Weight parameters by ONNX value name and shape (a reshaped initializer is a new weight).
  std::map<std::pair<std::string, Shape>, std::string> weight_params_;
  size_t node_first_binding_ = 0;       // the current node's first binding in block_
  std::set<std::string> output_named_;  // bindings already named after an ONNX output

 private:
  void declare_inputs(const onnx::GraphProto& g, const std::set<std::string>& initializers);
  // UserError listing every operator type of `g` without a converter (count, first node).
  void check_operators(const onnx::GraphProto& g);
  std::string fresh_value_name(const std::string& hint) {
    return sanitize(hint, used_names_, false, "v");
  }

  // Records the requirement a shape rule refuted (for narrowing()), then fails at the node.
  [[noreturn]] void refuted(const RefutedRequirement& e);

  std::string path_;
  OnnxImportOptions options_;
  std::optional<RefutedRequirement> refuted_;
  enum class BoundFrom : uint8_t { caller, input_shape, default_bound };
  struct DimVar {
    std::string dim;  // ONNX dim_param, or the variable's name for an unnamed dim
    BoundFrom from = BoundFrom::default_bound;
  };
  std::map<std::string, DimVar> dim_vars_;  // by variable name
  std::map<std::string, Value> values_;
  std::map<std::string, MType> types_;
  std::set<std::string> used_names_;
  std::set<std::string> used_syms_;
  Function fn_;
  Block block_;
  SymProver prover_;
  const NodeProto* node_ = nullptr;
  int node_index_ = 0;
  int opset_ = 0;
  int const_count_ = 0;
};

}  // namespace weft::onnx_import
