// Graphviz (DOT) rendering of a µGraph: one node per statement, one cluster per nested graph.
#include "ir/dot.h"

#include <fmt/format.h>

#include <variant>

namespace weft {

namespace {

// Escapes text for a double-quoted DOT string.
std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string dim_map_text(std::vector<int64_t> m) {
  while (m.size() > 1 && m.back() == -1) m.pop_back();
  std::string s = "[";
  for (size_t i = 0; i < m.size(); ++i)
    s += (i ? ", " : "") + (m[i] < 0 ? std::string("-") : std::to_string(m[i]));
  return s + "]";
}

std::string attr_text(const std::string& name, const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    if (name == "fmap" && *i < 0) return "fmap=-";
    return fmt::format("{}={}", name, *i);
  }
  if (const auto* r = std::get_if<Rational>(&v)) return fmt::format("{}={}", name, r->str());
  const auto& list = std::get<std::vector<int64_t>>(v);
  if (name == "imap" || name == "omap") return name + "=" + dim_map_text(list);
  std::string s = name + "=[";
  for (size_t i = 0; i < list.size(); ++i) s += (i ? ", " : "") + std::to_string(list[i]);
  return s + "]";
}

std::string attrs_text(const Attrs& attrs, const char* sep) {
  std::string s;
  for (const auto& [name, value] : attrs.entries())
    s += (s.empty() ? "" : sep) + attr_text(name, value);
  return s;
}

// Iterators show imap before fmap (the order they apply in); other ops list attributes by name.
std::string op_attrs_text(const Op& op, const char* sep) {
  if (op.kind != OpKind::iter) return attrs_text(op.attrs, sep);
  std::string s;
  for (const char* name : {"imap", "fmap"})
    if (op.attrs.has(name))
      s += (s.empty() ? "" : sep) + attr_text(name, op.attrs.entries().at(name));
  return s;
}

std::string names_of(const Graph& g, const std::vector<ValueId>& ids) {
  std::string s;
  for (ValueId v : ids) s += (s.empty() ? "" : ", ") + g.value(v).name;
  return s;
}

// Where a value comes from in the drawing: the node that produced it and, for kernel results,
// the omap its saver wrote it with.
struct Source {
  std::string node;
  std::string note;
};

class DotWriter {
 public:
  std::string run(const Graph& g) {
    std::string body;
    std::vector<Source> none;
    emit(g, "n", none, body, 1);
    std::string out = fmt::format("digraph \"{}\" {{\n", esc(g.name.empty() ? "ugraph" : g.name));
    out += "  rankdir=TB;\n  compound=true;\n  fontname=\"Helvetica\";\n";
    out += "  node [shape=box, fontname=\"Helvetica\", fontsize=11];\n";
    out += "  edge [fontname=\"Helvetica\", fontsize=9];\n";
    out += body;
    for (const std::string& e : edges_) out += "  " + e + "\n";
    out += "}\n";
    return out;
  }

 private:
  static std::string pad(int depth) { return std::string(2 * static_cast<size_t>(depth), ' '); }

  void edge(const Source& from, const std::string& to, const std::string& label) {
    std::string text = from.note.empty() ? label : from.note + "\n" + label;
    edges_.push_back(fmt::format("{} -> {} [label=\"{}\"];", from.node, to, esc(text)));
  }

  static std::string node_decl(const std::string& id, const std::string& label,
                               const std::string& style) {
    return fmt::format("{} [label=\"{}\"{}];\n", id, esc(label), style.empty() ? "" : ", " + style);
  }

  // Emits the nodes of `g` into `out` (nodes of block graphs into their stage clusters) and the
  // edges into edges_; returns the sources of g's outputs.
  std::vector<Source> emit(const Graph& g, const std::string& prefix,
                           const std::vector<Source>& operand_src, std::string& out, int depth) {
    std::vector<Source> src(g.values.size());
    if (g.level == Level::kernel) {
      for (size_t i = 0; i < g.inputs.size(); ++i) {
        ValueId v = g.inputs[i];
        std::string id = fmt::format("{}in{}", prefix, i);
        out +=
            pad(depth) + node_decl(id, g.value(v).name + "\n" + g.type(v).str(), "shape=ellipse");
        src[v] = Source{id, ""};
      }
    } else {
      for (size_t i = 0; i < g.inputs.size() && i < operand_src.size(); ++i)
        src[g.inputs[i]] = operand_src[i];
    }

    std::string loop_part, post_part;
    for (size_t i = 0; i < g.ops.size(); ++i) {
      const Op& op = g.ops[i];
      bool in_post = g.level == Level::block && op.stage == Stage::post;
      std::string& part = g.level == Level::block ? (in_post ? post_part : loop_part) : out;
      int d = g.level == Level::block ? depth + 1 : depth;
      std::string id = fmt::format("{}{}", prefix, i);

      if (op.body && (op.kind == OpKind::kernel || op.kind == OpKind::thread)) {
        std::vector<Source> in;
        for (ValueId v : op.inputs) in.push_back(src[v]);
        const Graph& body = *op.body;
        std::string title =
            op.kind == OpKind::kernel
                ? fmt::format("kernel {}: grid {}x{}x{}, block {}", names_of(g, op.outputs),
                              body.grid[0], body.grid[1], body.grid[2], body.threads)
                : fmt::format("thread {}", names_of(g, op.outputs));
        part += pad(d) + fmt::format("subgraph cluster_{} {{\n", id);
        part += pad(d + 1) + fmt::format("label=\"{}\";\n", esc(title));
        part += pad(d + 1) + (op.kind == OpKind::kernel ? "style=rounded; color=blue;\n"
                                                        : "style=dashed; color=darkgreen;\n");
        std::vector<Source> res = emit(body, id + "_", in, part, d + 1);
        part += pad(d) + "}\n";
        for (size_t k = 0; k < op.outputs.size() && k < res.size(); ++k)
          src[op.outputs[k]] = res[k];
        continue;
      }

      std::string label = op_info(op.kind).name;
      std::string attrs = op_attrs_text(op, "\n");
      if (!attrs.empty()) label += "\n" + attrs;
      std::string style;
      if (op.kind == OpKind::iter) style = "shape=invhouse";
      if (op.kind == OpKind::save) style = "shape=house";
      if (is_accumulator(op.kind)) style = "style=\"rounded,filled\", fillcolor=lightgrey";
      part += pad(d) + node_decl(id, names_of(g, op.outputs) + " = " + label, style);
      for (ValueId v : op.inputs) {
        std::string lbl = g.type(v).str();
        if (op.kind == OpKind::iter) lbl = op_attrs_text(op, " ") + "\n" + lbl;
        edge(src[v], id, lbl);
      }
      for (ValueId v : op.outputs) src[v] = Source{id, ""};
      if (op.kind == OpKind::save)
        src[op.outputs[0]].note =
            attr_text("omap", op.attrs.has("omap") ? op.attrs.entries().at("omap")
                                                   : AttrValue(std::vector<int64_t>{-1}));
    }

    if (g.level == Level::block) {
      out += pad(depth) + fmt::format("subgraph cluster_{}loop {{\n", prefix);
      out += pad(depth + 1) + fmt::format("label=\"for i in 0..{}\";\n", g.loop - 1);
      out += pad(depth + 1) + "style=dotted;\n";
      out += loop_part;
      out += pad(depth) + "}\n";
      if (!post_part.empty()) {
        out += pad(depth) + fmt::format("subgraph cluster_{}post {{\n", prefix);
        out += pad(depth + 1) + "label=\"after loop\";\n";
        out += pad(depth + 1) + "style=dotted;\n";
        out += post_part;
        out += pad(depth) + "}\n";
      }
    }

    std::vector<Source> results;
    for (ValueId v : g.outputs) results.push_back(src[v]);
    if (g.level == Level::kernel) {
      for (size_t i = 0; i < g.outputs.size(); ++i) {
        ValueId v = g.outputs[i];
        std::string id = fmt::format("{}out{}", prefix, i);
        out += pad(depth) + node_decl(id, "output " + g.value(v).name, "shape=ellipse");
        edge(src[v], id, g.type(v).str());
      }
    }
    return results;
  }

  std::vector<std::string> edges_;
};

}  // namespace

std::string to_dot(const Graph& g) {
  return DotWriter().run(g);
}

}  // namespace weft
