// ONNX import: reads a ModelProto with protobuf's generated classes (Debian's libonnx-dev) and
// converts its graph node by node through one table of converters keyed by op_type and opset
// range. Values are folded constants, symbolic integer vectors (shape arithmetic) or run-time
// IR values (docs/onnx.md).
#include "onnx/import.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/source_file.h"

#ifdef WEFT_HAVE_ONNX
#include "onnx/importer.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>

#include "core/dtype_convert.h"
#include "ir/cast.h"
#include "model/deduce.h"
#include "model/model_ops.h"
#endif

namespace weft {

bool is_onnx_path(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".onnx";
}

#ifndef WEFT_HAVE_ONNX

bool onnx_supported() {
  return false;
}

namespace {
[[noreturn]] void no_onnx(const std::string& path) {
  throw UserError(SourceLoc{path},
                  "weft was built without ONNX support (install libonnx-dev and protobuf, then "
                  "reconfigure: docs/onnx.md)");
}
}  // namespace

ImportedModel import_onnx(const std::string& path, const OnnxImportOptions&) {
  no_onnx(path);
}
ImportedModel import_onnx_bytes(const std::string&, const std::string& path,
                                const OnnxImportOptions&) {
  no_onnx(path);
}
std::vector<OnnxTensorFile> read_onnx_tensor_files(const std::string& dir, const char*) {
  no_onnx(dir);
}
OnnxGraphInfo onnx_graph_info(const std::string& path) {
  no_onnx(path);
}
OnnxTensorFile as_declared(OnnxTensorFile, int) {
  no_onnx("");
}

}  // namespace weft
#else

bool onnx_supported() {
  return true;
}

namespace {
std::string read_bytes(const std::string& path) {
  return read_binary_file(path);
}
}  // namespace

namespace onnx_import {

DType dtype_of_elem(int elem) {
  const CastTarget* t = cast_target(elem);
  const DType d = t ? cast_result_dtype(*t) : DType::f32;
  return d == DType::f16 || d == DType::bf16 ? DType::f32 : d;  // computed in f32 (docs/onnx.md)
}

int elem_of_dtype(DType dtype) {
  return static_cast<int>(cast_code_of(dtype));
}

bool is_integer_type(int elem) {
  switch (elem) {
    case TensorProto::INT8:
    case TensorProto::INT16:
    case TensorProto::INT32:
    case TensorProto::INT64:
    case TensorProto::UINT8:
    case TensorProto::UINT16:
    case TensorProto::UINT32:
    case TensorProto::UINT64:
    case TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

// Little-endian raw_data of `count` elements of type T as doubles.
template <typename T>
std::vector<double> raw_values(const std::string& raw, size_t count) {
  std::vector<double> out(count);
  for (size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
  return out;
}

double half_to_double(uint16_t h, bool bf16) {
  return bf16 ? bf16_bits_to_float(h) : f16_bits_to_float(h);
}

Tensor<double> tensor_from_proto(const TensorProto& t, const SourceLoc& where,
                                 const std::string& what) {
  Shape shape;
  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > (int64_t{1} << 40) || (d && numel > (int64_t{1} << 40) / d))
      throw UserError(where, fmt::format("{} has a bad dim {}", what, d));
    shape.push_back(d);
    numel *= d;
  }
  if (t.data_location() == TensorProto::EXTERNAL)
    throw UserError(where, fmt::format("{} keeps its data in an external file, which weft reads "
                                       "only for a model's own tensors",
                                       what));
  const auto n = static_cast<size_t>(numel);
  std::vector<double> v;
  const std::string& raw = t.raw_data();
  auto need_raw = [&](size_t bytes) {
    if (raw.size() != n * bytes)
      throw UserError(
          where, fmt::format("{} holds {} bytes of raw data for {} elements", what, raw.size(), n));
  };
  auto from_field = [&](const auto& field) {
    if (static_cast<size_t>(field.size()) != n)
      throw UserError(where,
                      fmt::format("{} holds {} values for {} elements", what, field.size(), n));
    for (auto x : field) v.push_back(static_cast<double>(x));
  };
  const bool has_raw = t.has_raw_data();
  switch (t.data_type()) {
    case TensorProto::FLOAT:
      if (has_raw)
        need_raw(4), v = raw_values<float>(raw, n);
      else
        from_field(t.float_data());
      break;
    case TensorProto::DOUBLE:
      if (has_raw)
        need_raw(8), v = raw_values<double>(raw, n);
      else
        from_field(t.double_data());
      break;
    case TensorProto::INT64:
      if (has_raw)
        need_raw(8), v = raw_values<int64_t>(raw, n);
      else
        from_field(t.int64_data());
      break;
    case TensorProto::UINT64:
      if (has_raw)
        need_raw(8), v = raw_values<uint64_t>(raw, n);
      else
        from_field(t.uint64_data());
      break;
    case TensorProto::INT32:
      if (has_raw)
        need_raw(4), v = raw_values<int32_t>(raw, n);
      else
        from_field(t.int32_data());
      break;
    case TensorProto::UINT32:
      if (has_raw)
        need_raw(4), v = raw_values<uint32_t>(raw, n);
      else
        from_field(t.uint64_data());
      break;
    case TensorProto::INT16:
      if (has_raw)
        need_raw(2), v = raw_values<int16_t>(raw, n);
      else
        from_field(t.int32_data());
      break;
    case TensorProto::UINT16:
      if (has_raw)
        need_raw(2), v = raw_values<uint16_t>(raw, n);
      else
        from_field(t.int32_data());
      break;
    case TensorProto::INT8:
      if (has_raw)
        need_raw(1), v = raw_values<int8_t>(raw, n);
      else
        from_field(t.int32_data());
      break;
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      if (has_raw)
        need_raw(1), v = raw_values<uint8_t>(raw, n);
      else
        from_field(t.int32_data());
      break;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16: {
      bool bf = t.data_type() == TensorProto::BFLOAT16;
      if (has_raw) {
        need_raw(2);
        for (double h : raw_values<uint16_t>(raw, n))
          v.push_back(half_to_double(static_cast<uint16_t>(h), bf));
      } else {
        if (static_cast<size_t>(t.int32_data_size()) != n)
          throw UserError(where, fmt::format("{} holds {} values for {} elements", what,
                                             t.int32_data_size(), n));
        for (int32_t h : t.int32_data()) v.push_back(half_to_double(static_cast<uint16_t>(h), bf));
      }
      break;
    }
    default:
      throw UserError(where, fmt::format("{} has data type {} ({}), which weft does not read", what,
                                         TensorProto::DataType_Name(t.data_type()), t.data_type()));
  }
  return Tensor<double>(shape, std::move(v));
}

std::optional<Rational> rational_of(double d) {
  if (!std::isfinite(d)) return std::nullopt;
  const auto target = static_cast<float>(d);
  __int128 den = 1;
  for (int p = 0; p <= 12; ++p, den *= 10) {
    double scaled = std::round(d * static_cast<double>(den));
    if (std::fabs(scaled) > 9e15) break;
    if (static_cast<float>(scaled / static_cast<double>(den)) == target)
      return Rational::make(static_cast<__int128>(scaled), den);
  }
  return std::nullopt;
}

Value constant_value(Tensor<double> t, int elem) {
  Value v;
  v.kind = VKind::constant;
  v.data = std::move(t);
  v.elem = elem;
  return v;
}

Value dims_value(std::vector<SymExpr> syms, bool scalar) {
  bool all_const = true;
  for (const SymExpr& s : syms) all_const = all_const && s.is_constant();
  if (all_const) {
    std::vector<double> d;
    for (const SymExpr& s : syms) d.push_back(static_cast<double>(s.constant()));
    Shape shape = scalar ? Shape{} : Shape{static_cast<int64_t>(syms.size())};
    return constant_value(Tensor<double>(shape, std::move(d)), TensorProto::INT64);
  }
  Value v;
  v.kind = VKind::dims;
  v.elem = TensorProto::INT64;
  v.syms = std::move(syms);
  v.scalar = scalar;
  return v;
}

const std::set<std::string, std::less<> >& wmod_keywords() {
  static const std::set<std::string, std::less<> > k = {
      "module", "sym",        "ugraph",      "fn",       "dataflow", "return", "tuple",
      "item",   "match_cast", "call_ugraph", "call_lib", "shape",    "int",    "if",
      "else",   "yield",      "floordiv",    "mod",      "min",      "max"};
  return k;
}

std::string sanitize(const std::string& name, std::set<std::string>& used, bool sym,
                     const char* fallback) {
  std::string s;
  for (char c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (!sym && c == '.');
    s += ok ? c : '_';
  }
  if (s.empty()) s = fallback;
  if (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.') s = std::string("v_") + s;
  if (wmod_keywords().count(s) || (sym && is_sym_keyword(s))) s += "_";
  std::string out = s;
  for (int i = 1; used.count(out); ++i) out = fmt::format("{}_{}", s, i);
  used.insert(out);
  return out;
}

std::pair<const Converter*, std::string> find_converter(const NodeProto& node, int opset) {
  const std::string& domain = node.domain();
  if (!domain.empty() && domain != "ai.onnx")
    return {nullptr,
            fmt::format("operator domain '{}' is not supported (only the default domain)", domain)};
  bool known = false;
  for (const Converter& c : converters()) {
    if (node.op_type() != c.op_type) continue;
    known = true;
    if (opset >= c.min_opset && opset <= c.max_opset) return {&c, ""};
  }
  if (known)
    return {nullptr, fmt::format("operator '{}' is supported, but not at opset {} (docs/onnx.md "
                                 "lists the opset ranges)",
                                 node.op_type(), opset)};
  return {nullptr, fmt::format("operator '{}' is not supported by weft", node.op_type())};
}

void Importer::check_operators(const onnx::GraphProto& g) {
  // Every unsupported operator type at once: a user meeting them one per run needs as many runs
  // as the model has missing types (issue 29).
  struct Missing {
    int count = 0;
    int first = 0;
    std::string why;
  };
  std::map<std::string, Missing> missing;
  int nodes = 0;
  for (int i = 0; i < g.node_size(); ++i) {
    auto [conv, why] = find_converter(g.node(i), opset_);
    if (conv) continue;
    const NodeProto& n = g.node(i);
    bool other_domain = !n.domain().empty() && n.domain() != "ai.onnx";
    Missing& m = missing[other_domain ? n.domain() + ":" + n.op_type() : n.op_type()];
    if (m.count++ == 0) m.first = i, m.why = why;
    ++nodes;
  }
  if (missing.empty()) return;
  if (nodes == 1) {
    node_ = &g.node(missing.begin()->second.first);
    node_index_ = missing.begin()->second.first;
    fail(missing.begin()->second.why);
  }
  std::string list;
  for (const auto& [type, m] : missing) {
    const NodeProto& n = g.node(m.first);
    list += fmt::format("\n  {}: {} node{}, first node {} '{}'", type, m.count,
                        m.count == 1 ? "" : "s", m.first, n.name());
    if (m.why.find("is not supported by weft") == std::string::npos)
      list += fmt::format(" ({})", m.why);
  }
  throw UserError(SourceLoc{path_},
                  fmt::format("{} operator type{} not supported by weft ({} nodes; `weft model "
                              "onnx-ops` lists those that are):{}",
                              missing.size(), missing.size() == 1 ? " is" : "s are", nodes, list));
}

std::pair<std::string, MType> Importer::runtime(const Value& v) {
  switch (v.kind) {
    case VKind::runtime:
      return {v.name, v.type};
    case VKind::dims: {
      Value t = op("dims_tensor", {}, {{"values", v.syms}});
      if (v.scalar) t = op("reshape", {t.name}, {{"shape", std::vector<SymExpr>{}}});
      t = as_elem(t, v.elem);  // a shape cast to another type (Cast of Shape's output)
      return {t.name, t.type};
    }
    case VKind::constant:
      break;
  }
  // A constant becomes a weight parameter: one per distinct ONNX value (cached by its name).
  const std::string& key = v.name;
  if (auto it = weight_params_.find({key, v.data.shape});
      !key.empty() && it != weight_params_.end())
    return {it->second, types_.at(it->second)};
  std::string name = fresh_value_name(key.empty() ? fmt::format("const{}", const_count_++) : key);
  if (!key.empty()) weight_params_[{key, v.data.shape}] = name;
  std::vector<SymExpr> d(v.data.shape.begin(), v.data.shape.end());
  MType type = MType::tensor(dtype_of_elem(v.elem), d);
  fn_.params.push_back(Param{name, type, SourceLoc{path_}});
  types_[name] = type;
  weights_[name] = v.data;
  return {name, type};
}

Value Importer::emit(CallKind kind, const std::string& callee, const std::vector<std::string>& args,
                     MAttrs attrs) {
  Binding b;
  // Intermediates are named OUTPUT.callee; out() gives the last one the output's own name.
  std::string hint = node_ && node_->output_size() > 0 && !node_->output(0).empty()
                         ? node_->output(0) + "." + (callee.empty() ? "tuple" : callee)
                         : std::string(kind == CallKind::tuple ? "outputs" : "t");
  b.var = fresh_value_name(hint);
  b.loc = node_loc();
  std::vector<MType> in;
  for (const std::string& a : args) in.push_back(type_of(a));
  try {
    DeduceContext ctx(prover_, b.loc, &b.runtime_checks);
    switch (kind) {
      case CallKind::op:
        b.type = deduce_table_op(ctx, *op_by_name(callee), in, attrs);
        break;
      case CallKind::item:
        b.type = in.at(0).fields.at(
            static_cast<size_t>(*std::get<SymExpr>(attrs.at("index")).as_constant()));
        break;
      case CallKind::tuple:
        b.type = MType::tuple(in);
        break;
      case CallKind::ugraph:
      case CallKind::lib:
      case CallKind::func:
      case CallKind::match_cast:
      case CallKind::if_:
        WEFT_FAIL("the importer emits operators, items and tuples only");
    }
  } catch (const RefutedRequirement& e) {
    refuted(e);
  } catch (const UserError& e) {
    fail(e.message());
  }
  b.call.kind = kind;
  b.call.callee = kind == CallKind::tuple || kind == CallKind::item ? "" : callee;
  b.call.args = args;
  b.call.attrs = std::move(attrs);
  b.call.loc = b.loc;
  types_[b.var] = b.type;
  Value v;
  v.kind = VKind::runtime;
  v.name = b.var;
  v.type = b.type;
  if (b.type.is_tensor()) v.elem = elem_of_dtype(b.type.dtype);
  block_.bindings.push_back(std::move(b));
  return v;
}

void Importer::out(int i, Value v) {
  if (i >= node_->output_size()) fail(fmt::format("has no output {}", i));
  const std::string& onnx_name = node_->output(i);
  if (onnx_name.empty()) return;
  if (v.kind == VKind::runtime && !output_named_.count(v.name)) {
    for (size_t k = node_first_binding_; k < block_.bindings.size(); ++k) {
      if (block_.bindings[k].var != v.name) continue;
      std::string name = fresh_value_name(onnx_name);
      for (size_t j = k; j < block_.bindings.size(); ++j)
        for (std::string& a : block_.bindings[j].call.args)
          if (a == v.name) a = name;
      for (auto& [key, value] : values_)
        if (value.kind == VKind::runtime && value.name == v.name) value.name = name;
      block_.bindings[k].var = name;
      types_[name] = types_.at(v.name);
      v.name = name;
      output_named_.insert(name);
      break;
    }
  }
  values_[onnx_name] = std::move(v);
}

void Importer::declare_inputs(const onnx::GraphProto& g,
                              const std::set<std::string>& initializers) {
  std::map<std::string, std::string> dim_params;  // ONNX dim_param -> sym name
  for (const onnx::ValueInfoProto& vi : g.input()) {
    if (initializers.count(vi.name())) continue;  // an initializer's default value
    graph_inputs_.push_back(vi.name());
    if (auto k = options_.known_inputs.find(vi.name()); k != options_.known_inputs.end()) {
      int elem = vi.type().has_tensor_type() ? vi.type().tensor_type().elem_type() : 1;
      Value v = constant_value(k->second, elem);
      v.name = vi.name();
      values_[vi.name()] = std::move(v);
      continue;
    }
    if (!vi.type().has_tensor_type())
      fail(
          fmt::format("graph input '{}' is not a tensor (sequences, maps and optionals are not "
                      "supported)",
                      vi.name()));
    const auto& tt = vi.type().tensor_type();
    if (!tt.has_shape())
      fail(fmt::format("graph input '{}' has no shape (weft needs at least its rank)", vi.name()));
    std::vector<SymExpr> dims;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          fail(fmt::format("graph input '{}' has dim {}", vi.name(), d.dim_value()));
        dims.emplace_back(d.dim_value());
        continue;
      }
      std::string onnx_name = d.has_dim_param() ? d.dim_param() : std::string();
      auto it = onnx_name.empty() ? dim_params.end() : dim_params.find(onnx_name);
      if (it == dim_params.end()) {
        std::string hint =
            onnx_name.empty() ? fmt::format("{}_{}", vi.name(), dims.size()) : onnx_name;
        std::string sym = sanitize(hint, used_syms_, true, "d");
        DimVar var{onnx_name.empty() ? sym : onnx_name, BoundFrom::default_bound};
        int64_t hi = options_.default_bound;
        std::optional<int64_t> given;  // this input's value of the dim in the run
        if (auto s = options_.input_shapes.find(vi.name());
            s != options_.input_shapes.end() && dims.size() < s->second.size())
          given = s->second[dims.size()];
        if (given) {
          hi = std::max<int64_t>(*given, 1);
          var.from = BoundFrom::input_shape;
        }
        for (const std::string& k : {onnx_name, sym})
          if (auto b = options_.bounds.find(k); !k.empty() && b != options_.bounds.end()) {
            hi = b->second;
            var.from = BoundFrom::caller;
          }
        if (given && var.from == BoundFrom::caller && *given > hi)
          fail(
              fmt::format("graph input '{}' dim {} ({}) is {} in the inputs given, above its "
                          "bound {}; raise it (--bound {}={})",
                          vi.name(), dims.size(), var.dim, *given, hi, var.dim, *given));
        module_.syms.declare(sym, 1, hi, SourceLoc{path_});
        dim_vars_[sym] = var;
        if (!onnx_name.empty()) dim_params[onnx_name] = sym;
        it = onnx_name.empty() ? dim_params.end() : dim_params.find(onnx_name);
        dims.push_back(*module_.syms.find(sym));
        continue;
      }
      dims.push_back(*module_.syms.find(it->second));
    }
    std::string name = fresh_value_name(vi.name());
    MType type = MType::tensor(dtype_of_elem(tt.elem_type()), dims);
    fn_.params.push_back(Param{name, type, SourceLoc{path_}});
    types_[name] = type;
    Value v;
    v.kind = VKind::runtime;
    v.name = name;
    v.type = type;
    v.elem = tt.elem_type();
    values_[vi.name()] = v;
    inputs_.push_back(OnnxName{vi.name(), name});
  }
}

ImportedModel Importer::run(const onnx::ModelProto& model) {
  for (const auto& os : model.opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx") opset_ = static_cast<int>(os.version());
  if (opset_ == 0) fail("the model imports no opset of the default domain (ai.onnx)");
  if (!model.has_graph()) fail("the model has no graph");
  const onnx::GraphProto& g = model.graph();
  module_.name = sanitize(g.name().empty() ? "onnx" : g.name(), used_syms_, true, "onnx");
  used_syms_.clear();
  fn_.name = "main";
  fn_.loc = SourceLoc{path_};
  block_.dataflow = true;

  std::set<std::string> initializers;
  for (const TensorProto& t : g.initializer()) {
    Value v = constant_value(
        tensor_from_proto(t, SourceLoc{path_}, fmt::format("initializer '{}'", t.name())),
        t.data_type());
    v.name = t.name();
    values_[t.name()] = std::move(v);
    initializers.insert(t.name());
  }
  if (g.sparse_initializer_size() > 0) fail("sparse initializers are not supported");
  declare_inputs(g, initializers);

  check_operators(g);
  for (int i = 0; i < g.node_size(); ++i) {
    node_ = &g.node(i);
    node_index_ = i;
    node_first_binding_ = block_.bindings.size();
    const Converter* conv = find_converter(*node_, opset_).first;
    WEFT_CHECK(conv, "check_operators let an unsupported node through");
    conv->fn(*this);
    for (int o = 0; o < node_->output_size(); ++o)
      if (!node_->output(o).empty() && !values_.count(node_->output(o)))
        fail(fmt::format("output {} ('{}') is not supported", o, node_->output(o)));
  }
  node_ = nullptr;

  ImportedModel out;
  std::vector<std::string> results;
  for (const onnx::ValueInfoProto& vi : g.output()) {
    auto it = values_.find(vi.name());
    if (it == values_.end()) fail(fmt::format("graph output '{}' is never computed", vi.name()));
    if (it->second.kind == VKind::constant && it->second.name.empty()) it->second.name = vi.name();
    std::string name = runtime(it->second).first;
    results.push_back(name);
    out.outputs.push_back(OnnxName{vi.name(), name});
    int elem = vi.type().has_tensor_type() ? vi.type().tensor_type().elem_type() : 1;
    out.output_elem_types.push_back(elem);
  }
  if (results.empty()) fail("the graph has no outputs");
  if (results.size() == 1) {
    fn_.result = results[0];
  } else {
    fn_.result = emit(CallKind::tuple, "", results).name;
  }
  fn_.ret = types_.at(fn_.result);
  fn_.result_loc = SourceLoc{path_};
  if (!block_.bindings.empty()) fn_.blocks.push_back(std::move(block_));
  module_.functions.push_back(std::move(fn_));
  try {
    deduce_module(module_, prover_);
  } catch (const UserError& e) {
    // A refuted requirement is remembered (the caller may narrow a bound and import again).
    if (const auto* r = dynamic_cast<const RefutedRequirement*>(&e)) refuted_ = *r;
    // Bindings carry their node's location; the function's own checks name the file.
    throw UserError(e.loc().file.empty() ? SourceLoc{path_} : e.loc(), e.message());
  }
  out.module = std::move(module_);
  out.inputs = inputs_;
  out.graph_inputs = graph_inputs_;
  out.weights = std::move(weights_);
  return out;
}

}  // namespace onnx_import

namespace {
onnx::ModelProto parse_model(const std::string& bytes, const std::string& path) {
  onnx::ModelProto model;
  // No bytes parse as an empty ModelProto, whose first complaint would be a missing opset.
  if (bytes.empty()) throw UserError(SourceLoc{path}, "not an ONNX model (the file is empty)");
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromString(bytes))
    throw UserError(SourceLoc{path},
                    "not an ONNX model (the file does not parse as a "
                    "ModelProto: truncated or not ONNX)");
  return model;
}
}  // namespace

ImportedModel import_onnx_bytes(const std::string& bytes, const std::string& path,
                                const OnnxImportOptions& options) {
  onnx_import::require_weights_fit(static_cast<int64_t>(bytes.size()), options.memory_limit_bytes,
                                   path, "the model file is");
  onnx::ModelProto model = parse_model(bytes, path);
  onnx_import::load_external_data(model, path, options.memory_limit_bytes);
  OnnxImportOptions narrowed = options;
  std::vector<std::string> notes;
  // Each round lowers one dim's bound, so the rounds end; a model that limits more dims than
  // this is told to give its bounds.
  constexpr int kMaxNarrowings = 16;
  for (int round = 0;; ++round) {
    onnx_import::Importer importer(path, narrowed);
    try {
      ImportedModel m = importer.run(model);
      m.notes = std::move(notes);
      return m;
    } catch (const UserError& e) {
      auto n = importer.narrowing();
      if (!n) throw;
      std::string limit = fmt::format("{}: the model allows {} <= {} at most (it expects {})",
                                      n->where.str(), n->dim, n->value, n->expects);
      // A bound the caller gave (--bound) or one the run's inputs set: only the first is a flag.
      if (n->user_bound)
        throw UserError(
            e.loc(), !n->from_inputs
                         ? fmt::format("{}; {} is {} here: give it at most {} (--bound {}={}, "
                                       "or smaller inputs)",
                                       e.message(), n->dim, n->was, n->value, n->dim, n->value)
                         : fmt::format("{}; the inputs make {} {}: give inputs with {} at most {}",
                                       e.message(), n->dim, n->was, n->dim, n->value));
      if (round == kMaxNarrowings)
        throw UserError(e.loc(), fmt::format("{}; the model limits more than {} dims: give "
                                             "their bounds (--bound NAME=N)",
                                             e.message(), kMaxNarrowings));
      notes.push_back(fmt::format("{}; {} is bounded by {}, not {} (--bound {}=N for less)", limit,
                                  n->dim, n->value, n->was, n->dim));
      narrowed.bounds[n->sym] = n->value;
    }
  }
}

OnnxGraphInfo onnx_graph_info(const std::string& path) {
  onnx::ModelProto model = parse_model(read_bytes(path), path);
  std::set<std::string> initializers, ops;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  OnnxGraphInfo out;
  auto elem_of = [](const onnx::ValueInfoProto& vi) {
    return vi.type().has_tensor_type() ? vi.type().tensor_type().elem_type() : 0;
  };
  for (const auto& vi : model.graph().input())
    if (!initializers.count(vi.name())) {
      out.graph_inputs.push_back(vi.name());
      out.input_elem_types.push_back(elem_of(vi));
    }
  for (const auto& vi : model.graph().output()) out.output_elem_types.push_back(elem_of(vi));
  for (const auto& n : model.graph().node()) ops.insert(n.op_type());
  out.op_types.assign(ops.begin(), ops.end());
  return out;
}

ImportedModel import_onnx(const std::string& path, const OnnxImportOptions& options) {
  std::error_code ec;
  if (auto size = std::filesystem::file_size(path, ec); !ec)  // refused before it is read
    onnx_import::require_weights_fit(static_cast<int64_t>(size), options.memory_limit_bytes, path,
                                     "the model file is");
  return import_onnx_bytes(read_bytes(path), path, options);
}

std::vector<OnnxTensorFile> read_onnx_tensor_files(const std::string& dir, const char* prefix) {
  std::vector<OnnxTensorFile> out;
  for (int i = 0;; ++i) {
    std::string file = fmt::format("{}/{}_{}.pb", dir, prefix, i);
    if (!std::filesystem::exists(file)) break;
    onnx::TensorProto t;
    if (!t.ParseFromString(read_bytes(file)))
      throw UserError(SourceLoc{file}, "not a TensorProto (truncated or not ONNX)");
    out.push_back(OnnxTensorFile{t.name(),
                                 onnx_import::tensor_from_proto(t, SourceLoc{file}, "the tensor"),
                                 t.data_type(), onnx_import::is_integer_type(t.data_type())});
  }
  return out;
}

OnnxTensorFile as_declared(OnnxTensorFile file, int declared_elem_type) {
  if (file.elem_type == onnx::TensorProto::UINT16 &&
      declared_elem_type == onnx::TensorProto::BFLOAT16) {
    for (double& v : file.tensor.data)
      v = onnx_import::half_to_double(static_cast<uint16_t>(v), true);
    file.elem_type = onnx::TensorProto::BFLOAT16;
    file.integral = false;
  }
  return file;
}

}  // namespace weft
#endif
