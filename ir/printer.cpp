// Canonical printing of µGraphs: flat SSA statements, defaults omitted, nested bodies indented.
#include "ir/printer.h"

#include <fmt/format.h>

namespace weft {
namespace {

// Number of grid entries to print: up to the last dim of size > 1, at least one.
size_t grid_rank(const std::array<int64_t, 3>& grid) {
  size_t r = 1;
  for (size_t i = 0; i < 3; ++i)
    if (grid[i] > 1) r = i + 1;
  return r;
}

std::string dim_or_dash(int64_t d) {
  return d < 0 ? "-" : fmt::format("{}", d);
}

std::string attr_value(AttrKind kind, const AttrValue& v, size_t map_rank) {
  switch (kind) {
    case AttrKind::integer:
      return fmt::format("{}", std::get<int64_t>(v));
    case AttrKind::opt_dim:
      return dim_or_dash(std::get<int64_t>(v));
    case AttrKind::rational:
      if (std::holds_alternative<int64_t>(v)) return fmt::format("{}", std::get<int64_t>(v));
      return std::get<Rational>(v).str();
    case AttrKind::int_list:
      return fmt::format("[{}]", fmt::join(std::get<std::vector<int64_t>>(v), ", "));
    case AttrKind::dim_map: {
      const auto& m = std::get<std::vector<int64_t>>(v);
      std::vector<std::string> parts;
      for (size_t i = 0; i < std::max(map_rank, size_t{1}); ++i)
        parts.push_back(dim_or_dash(i < m.size() ? m[i] : -1));
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
  }
  return "?";
}

class Printer {
 public:
  explicit Printer(bool types) : types_(types) {}
  std::string out;

  void graph(const Graph& g, int indent) {
    if (g.level == Level::kernel) {
      if (!g.name.empty()) out += fmt::format("program {}\n", g.name);
      for (ValueId in : g.inputs)
        line(indent, fmt::format("input {}: {}", g.value(in).name, g.type(in).str()), "");
    }
    bool after = false;
    for (const Op& op : g.ops) {
      if (g.level == Level::block) {
        WEFT_CHECK(!(after && op.stage == Stage::loop),
                   "block graph has a loop-stage op after a post-stage op");
        if (op.stage == Stage::post && !after) {
          line(indent - 1, "after:", "");
          after = true;
        }
      }
      statement(g, op, indent);
    }
    if (g.level == Level::block && !after) line(indent - 1, "after:", "");
    if (g.level != Level::block)
      for (ValueId o : g.outputs) line(indent, fmt::format("output {}", g.value(o).name), "");
    for (const ProgramInterface& i : g.interfaces) line(indent, interface_text(i), "");
  }

 private:
  void line(int indent, const std::string& text, const std::string& comment) {
    out.append(static_cast<size_t>(std::max(indent, 0)) * 2, ' ');
    out += text;
    if (types_ && !comment.empty()) out += "  # " + comment;
    out += '\n';
  }

  void statement(const Graph& g, const Op& op, int indent) {
    const OpInfo& info = op_info(op.kind);
    std::vector<std::string> names, types, args;
    for (ValueId v : op.outputs) {
      names.push_back(g.value(v).name);
      types.push_back(g.type(v).str());
    }
    for (ValueId v : op.inputs) args.push_back(g.value(v).name);
    std::string lhs = fmt::format("{}", fmt::join(names, ", "));
    std::string comment = fmt::format("{}", fmt::join(types, ", "));
    if (op.body) {
      const Graph& body = *op.body;
      if (op.kind == OpKind::kernel) {
        std::vector<std::string> grid;
        for (size_t i = 0; i < grid_rank(body.grid); ++i)
          grid.push_back(fmt::format("{}", body.grid[i]));
        args.push_back(fmt::format("grid=[{}]", fmt::join(grid, ", ")));
        args.push_back(fmt::format("block={}", body.threads));
        args.push_back(fmt::format("loop={}", body.loop));
      }
      line(indent, fmt::format("{} = {}({}) {{", lhs, info.name, fmt::join(args, ", ")), comment);
      graph(body, indent + 1);
      line(indent, "}", "");
      return;
    }
    size_t map_rank = g.level == Level::block ? grid_rank(g.grid) : 1;
    for (const AttrSpec& spec : info.attrs) {
      auto it = op.attrs.entries().find(spec.name);
      if (it == op.attrs.entries().end()) continue;
      if (!spec.required && it->second == spec.default_value) continue;
      args.push_back(fmt::format("{}={}", spec.name, attr_value(spec.kind, it->second, map_rank)));
    }
    line(indent, fmt::format("{} = {}({})", lhs, info.name, fmt::join(args, ", ")), comment);
  }

  bool types_;
};

}  // namespace

std::string print_graph(const Graph& g, bool type_comments) {
  Printer p(type_comments);
  p.graph(g, g.level == Level::kernel ? 0 : 1);
  return std::move(p.out);
}

}  // namespace weft
