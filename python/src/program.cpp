// Programs in Python: the Graph type (value semantics: Python holds its own copy), the text format
// (parse, load, print), the checker, the Graphviz drawing, the operator table and a GraphBuilder
// for python/weft's Builder.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "core/target.h"
#include "driver/check.h"
#include "driver/load.h"
#include "driver/render_dot.h"
#include "ir/dot.h"
#include "ir/ops.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "python/src/bindings.h"

namespace weft::python {
namespace {

using TypeTuple = std::tuple<std::string, std::string, std::vector<int64_t>>;  // name, dtype, shape

TypeTuple value_tuple(const Graph& g, ValueId id) {
  const Value& v = g.value(id);
  return {v.name, std::string(dtype_name(v.type.dtype)), v.type.shape};
}

std::vector<TypeTuple> value_tuples(const Graph& g, const std::vector<ValueId>& ids) {
  std::vector<TypeTuple> out;
  for (ValueId id : ids) out.push_back(value_tuple(g, id));
  return out;
}

DType dtype_of(const std::string& name) {
  std::optional<DType> d = dtype_from_name(name);
  if (!d || !is_kernel_dtype(*d))
    throw UserError(fmt::format("unknown dtype '{}'; use f32, f16 or bf16", name));
  return *d;
}

std::string attr_kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::integer:
      return "integer";
    case AttrKind::rational:
      return "rational";
    case AttrKind::int_list:
      return "int_list";
    case AttrKind::dim_map:
      return "dim_map";
    case AttrKind::opt_dim:
      return "opt_dim";
  }
  return "";
}

int64_t int_of(nb::handle h, const std::string& what) {
  if (!nb::isinstance<nb::int_>(h) || nb::isinstance<nb::bool_>(h))
    throw UserError(
        fmt::format("{} must be an integer, not {}", what, std::string(Py_TYPE(h.ptr())->tp_name)));
  return nb::cast<int64_t>(h);
}

// -1 stands for "-" (replicated / none) in dim maps and optional dims: None in Python.
int64_t dim_of(nb::handle h, const std::string& what) {
  return h.is_none() ? -1 : int_of(h, what);
}

// An exact rational from an int, a str ("1/4096", "1e-6"), a float (its shortest repr, so 1e-6
// is exactly 1/1000000) or anything with numerator and denominator (fractions.Fraction).
Rational rational_of(nb::handle h, const std::string& what) {
  std::string text;
  if (nb::isinstance<nb::bool_>(h)) {
    text = "";
  } else if (nb::isinstance<nb::int_>(h) || nb::isinstance<nb::float_>(h)) {
    text = nb::cast<std::string>(nb::repr(h));
  } else if (nb::isinstance<nb::str>(h)) {
    text = nb::cast<std::string>(h);
  } else if (nb::hasattr(h, "numerator") && nb::hasattr(h, "denominator")) {
    text = nb::cast<std::string>(nb::repr(h.attr("numerator"))) + "/" +
           nb::cast<std::string>(nb::repr(h.attr("denominator")));
  }
  std::optional<Rational> r = Rational::parse(text);
  if (!r)
    throw UserError(
        fmt::format("{} must be a rational constant (an int, a finite float, a "
                    "Fraction or a string like '1/4096'), not {}",
                    what, nb::cast<std::string>(nb::repr(h))));
  return *r;
}

AttrValue attr_of(const AttrSpec& spec, nb::handle h, const std::string& what) {
  switch (spec.kind) {
    case AttrKind::integer:
      return int_of(h, what);
    case AttrKind::rational:
      return rational_of(h, what);
    case AttrKind::opt_dim:
      return dim_of(h, what);
    case AttrKind::int_list:
    case AttrKind::dim_map: {
      if (!nb::isinstance<nb::list>(h) && !nb::isinstance<nb::tuple>(h))
        throw UserError(fmt::format("{} must be a list", what));
      std::vector<int64_t> v;
      for (nb::handle e : h)
        v.push_back(spec.kind == AttrKind::dim_map ? dim_of(e, what + " entry")
                                                   : int_of(e, what + " entry"));
      return v;
    }
  }
  return int64_t{0};
}

Attrs attrs_of(const OpInfo& info, const nb::dict& given) {
  Attrs attrs;
  for (auto [key, value] : given) {
    std::string name = nb::cast<std::string>(key);
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : info.attrs)
      if (name == s.name) spec = &s;
    if (!spec) {
      std::string known;
      for (const AttrSpec& s : info.attrs)
        known += fmt::format("{}{}", known.empty() ? "" : ", ", s.name);
      throw UserError(fmt::format("{} has no attribute '{}' (it has: {})", info.name, name,
                                  known.empty() ? "none" : known));
    }
    attrs.set(name, attr_of(*spec, value, fmt::format("{}'s {}", info.name, name)));
  }
  return attrs;
}

std::string check(const Graph& g, const std::string& target, const std::string& file) {
  const Target& t = target.empty() ? default_target() : target_by_name(target);
  CheckReport report = check_program(g, t, file);
  if (report.violations.empty()) return report.summary;
  const UserError& first = report.violations.front();
  std::string message = first.message();
  for (size_t i = 1; i < report.violations.size(); ++i)
    message += std::string("\n") + report.violations[i].what();
  throw UserError(first.loc(), message);
}

nb::list op_table() {
  nb::list ops;
  for (const OpInfo& info : all_ops()) {
    nb::list attrs;
    for (const AttrSpec& a : info.attrs)
      attrs.append(nb::make_tuple(a.name, attr_kind_name(a.kind), a.required));
    nb::dict d;
    d["name"] = info.name;
    d["min_inputs"] = info.min_inputs;
    d["max_inputs"] = info.max_inputs;
    d["kernel_level"] = (info.levels & kAtKernel) != 0;
    d["model_level"] = (info.levels & kAtModel) != 0;
    d["model_only"] = is_model_only(info.kind);
    d["attrs"] = attrs;
    d["doc"] = info.doc;
    ops.append(d);
  }
  return ops;
}

}  // namespace

void bind_program(nb::module_& m) {
  nb::class_<Graph>(m, "Graph")
      .def(
          "text", [](const Graph& g, bool type_comments) { return print_graph(g, type_comments); },
          nb::arg("type_comments") = true)
      .def("dot", [](const Graph& g) { return to_dot(g); })
      .def_prop_ro("name", [](const Graph& g) { return g.name; })
      .def_prop_ro("inputs", [](const Graph& g) { return value_tuples(g, g.inputs); })
      .def_prop_ro("outputs", [](const Graph& g) { return value_tuples(g, g.outputs); })
      .def_prop_ro("num_ops", [](const Graph& g) { return g.ops.size(); })
      .def("__eq__", [](const Graph& a, const Graph& b) { return a == b; })
      .def("copy", [](const Graph& g) { return Graph(g); });

  m.def("parse", [](const std::string& text, const std::string& filename) {
    return parse_graph(text, filename);
  });
  m.def("load", [](const std::string& path) { return load_graph(path); });
  m.def("check", &check, nb::arg("graph"), nb::arg("target"), nb::arg("file"));
  m.def("render_dot", [](const std::string& text, const std::string& out) {
    nb::gil_scoped_release release;
    render_dot(text, out);
  });
  m.def("find_dot", &find_dot);
  m.def("ops", &op_table);
  m.def("targets", [] {
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    for (const Target& t : all_targets())
      out.emplace_back(t.name, t.kind == TargetKind::cpu ? "cpu" : "gpu", t.description);
    return out;
  });

  nb::class_<GraphBuilder>(m, "GraphBuilder")
      .def("__init__", [](GraphBuilder* b,
                          const std::string& name) { new (b) GraphBuilder(Level::kernel, name); })
      .def("add_input",
           [](GraphBuilder& b, const std::string& name, const std::string& dtype,
              const std::vector<int64_t>& shape) {
             return b.add_input(name, TensorType{dtype_of(dtype), shape});
           })
      .def("add_op",
           [](GraphBuilder& b, const std::string& op, const std::vector<ValueId>& inputs,
              const nb::dict& attrs, const std::vector<std::string>& names) {
             std::optional<OpKind> kind = op_by_name(op);
             if (!kind) throw UserError(fmt::format("unknown operator '{}'", op));
             const OpInfo& info = op_info(*kind);
             if (is_model_only(*kind)) check_op_level(info, Level::kernel, {});
             if (info.op_class == OpClass::hierarchy || !(info.levels & kAtKernel))
               throw UserError(fmt::format(
                   "{} belongs in a graph-defined kernel: write such programs in the text format "
                   "(weft.parse)",
                   op));
             for (ValueId id : inputs)
               if (id < 0 || static_cast<size_t>(id) >= b.graph().values.size())
                 throw UserError(fmt::format("{}: an operand is not a value of this builder", op));
             return b.add_op(*kind, inputs, attrs_of(info, attrs), names);
           })
      .def("add_output",
           [](GraphBuilder& b, ValueId id) {
             if (id < 0 || static_cast<size_t>(id) >= b.graph().values.size())
               throw UserError("output: not a value of this builder");
             b.add_output(id);
           })
      .def("value", [](const GraphBuilder& b, ValueId id) { return value_tuple(b.graph(), id); })
      .def("graph", [](const GraphBuilder& b) { return Graph(b.graph()); });
}

}  // namespace weft::python
