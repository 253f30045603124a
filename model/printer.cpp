// Printer of the .wmod text format.
#include "model/printer.h"

#include <fmt/format.h>

#include <sstream>

#include "ir/printer.h"
#include "model/model_ops.h"

namespace weft {
namespace {

std::string attr_str(const MAttrValue& v) {
  if (auto* e = std::get_if<SymExpr>(&v)) return e->str();
  if (auto* r = std::get_if<Rational>(&v)) {
    // A rational that is an integer prints with a decimal point, so it reads back as a rational.
    std::string s = r->str();
    return r->is_integer() ? s + ".0" : s;
  }
  std::vector<std::string> parts;
  for (const SymExpr& e : std::get<std::vector<SymExpr>>(v)) parts.push_back(e.str());
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// The attributes in the order the callee declares them (or by name).
std::vector<std::string> attrs_str(const Call& c) {
  const std::vector<AttrSpec>* specs = nullptr;
  if (c.kind == CallKind::op) specs = &op_info(*op_by_name(c.callee)).attrs;
  std::vector<std::string> out;
  if (specs) {
    for (const AttrSpec& s : *specs)
      if (auto it = c.attrs.find(s.name); it != c.attrs.end())
        out.push_back(fmt::format("{}={}", s.name, attr_str(it->second)));
    return out;
  }
  for (const auto& [name, value] : c.attrs)
    out.push_back(fmt::format("{}={}", name, attr_str(value)));
  return out;
}

std::string call_str(const Call& c) {
  std::vector<std::string> parts;
  std::string head;
  switch (c.kind) {
    case CallKind::op:
    case CallKind::func:
      head = c.callee;
      break;
    case CallKind::ugraph:
    case CallKind::lib:
      head = std::string(call_kind_name(c.kind));
      parts.push_back(c.callee);
      break;
    case CallKind::tuple:
    case CallKind::item:
    case CallKind::match_cast:
    case CallKind::if_:  // print_binding writes the arms
      head = std::string(call_kind_name(c.kind));
      break;
  }
  for (const std::string& a : c.args) parts.push_back(a);
  if (c.kind == CallKind::match_cast) parts.push_back(c.cast_type.str());
  for (std::string& a : attrs_str(c)) parts.push_back(std::move(a));
  return fmt::format("{}({})", head, fmt::join(parts, ", "));
}

void print_binding(std::ostringstream& out, const Binding& b, const std::string& indent,
                   bool type_comments) {
  if (b.call.kind == CallKind::if_) {
    const SymCondition& c = b.call.cond;
    out << indent << b.var << " = if " << c.lhs.str() << " " << sym_rel_symbol(c.rel) << " "
        << c.rhs.str() << " {";
    if (type_comments) out << "  # " << b.type.str();
    out << "\n";
    for (size_t i = 0; i < b.call.branches.size(); ++i) {
      const IfBranch& arm = b.call.branches[i];
      if (i > 0) out << indent << "} else {\n";
      for (const Binding& x : arm.bindings) print_binding(out, x, indent + "  ", type_comments);
      out << indent << "  yield " << arm.result << "\n";
    }
    out << indent << "}\n";
    return;
  }
  out << indent << b.var << " = " << call_str(b.call);
  if (type_comments) out << "  # " << b.type.str();
  out << "\n";
}

}  // namespace

std::string print_module(const Module& m, bool type_comments) {
  std::ostringstream out;
  if (!m.name.empty()) out << "module " << m.name << "\n";
  if (!m.syms.vars().empty()) {
    std::vector<std::string> decls;
    for (const auto& [name, var] : m.syms.vars()) decls.push_back(var.decl_str());
    out << "sym " << fmt::format("{}", fmt::join(decls, ", ")) << "\n";
  }
  for (const UGraphDef& g : m.ugraphs) {
    out << "\n";
    if (!g.path.empty()) {
      out << "ugraph " << g.name << " = \"" << g.path << "\"\n";
      continue;
    }
    out << "ugraph " << g.name << " {\n";
    std::istringstream body(print_graph(*g.graph, false));
    for (std::string line; std::getline(body, line);)
      out << (line.empty() ? "" : "  ") << line << "\n";
    out << "}\n";
  }
  for (const Function& f : m.functions) {
    out << "\nfn " << f.name << "(";
    for (size_t i = 0; i < f.params.size(); ++i)
      out << (i ? ", " : "") << f.params[i].name << ": " << f.params[i].type.str();
    out << ") -> " << f.ret.str() << " {\n";
    for (const Block& b : f.blocks) {
      if (b.dataflow) {
        out << "  dataflow {\n";
        for (const Binding& x : b.bindings) print_binding(out, x, "    ", type_comments);
        out << "  }\n";
      } else {
        for (const Binding& x : b.bindings) print_binding(out, x, "  ", type_comments);
      }
    }
    out << "  return " << f.result << "\n}\n";
  }
  return out.str();
}

std::string module_summary(const Module& m) {
  size_t bindings = 0, checks = 0;
  for (const Function& f : m.functions) {
    checks += f.return_checks.size();
    for (const Block& b : f.blocks) {
      bindings += b.bindings.size();
      for (const Binding& x : b.bindings) checks += x.runtime_checks.size();
    }
  }
  auto s = [](size_t n) { return n == 1 ? "" : "s"; };
  return fmt::format(
      "{} function{}, {} binding{}, {} µGraph{}, {} symbolic variable{}, {} run-time check{}",
      m.functions.size(), s(m.functions.size()), bindings, s(bindings), m.ugraphs.size(),
      s(m.ugraphs.size()), m.syms.vars().size(), s(m.syms.vars().size()), checks, s(checks));
}

}  // namespace weft
