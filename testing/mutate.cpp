// The mutant generator: local edits at every graph level, kept only if print -> parse accepts them.
#include "testing/mutate.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>

#include "core/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/validate.h"

namespace weft {
namespace {

using Edit = std::pair<std::string, Graph>;

std::string vname(const Graph& g, ValueId v) {
  return g.value(v).name;
}

ValueId new_value(Graph& g, const std::string& hint, const TensorType& type) {
  std::string name;
  for (int i = 1;; ++i) {
    name = fmt::format("{}.m{}", hint, i);
    if (g.find(name) < 0) break;
  }
  g.values.push_back(Value{name, type, {}});
  return static_cast<ValueId>(g.values.size()) - 1;
}

// Every use of `from` after op `after` (and in the graph outputs) reads `to` instead.
void replace_uses(Graph& g, ValueId from, ValueId to, size_t after) {
  for (size_t i = after + 1; i < g.ops.size(); ++i)
    for (ValueId& v : g.ops[i].inputs)
      if (v == from) v = to;
  for (ValueId& v : g.outputs)
    if (v == from) v = to;
}

bool is_unary(OpKind k) {
  return op_info(k).op_class == OpClass::unary;
}
bool is_binary(OpKind k) {
  return op_info(k).op_class == OpClass::binary;
}
// Unary operators without attributes, in table order: each one's mutants are the next two.
const std::vector<OpKind>& plain_unary_ops() {
  static const std::vector<OpKind> ops = [] {
    std::vector<OpKind> v;
    for (const OpInfo& info : all_ops())
      if (info.op_class == OpClass::unary && info.attrs.empty()) v.push_back(info.kind);
    return v;
  }();
  return ops;
}
const std::vector<OpKind>& binary_ops() {
  static const std::vector<OpKind> ops = [] {
    std::vector<OpKind> v;
    for (const OpInfo& info : all_ops())
      if (info.op_class == OpClass::binary) v.push_back(info.kind);
    return v;
  }();
  return ops;
}

// Block graphs: loop values, accumulator results and post values may not stand in for each other
// (a loop-stage op cannot read an accumulator's result).
int value_class(const Graph& g, const std::vector<int>& producers, ValueId v) {
  if (g.level != Level::block || producers[v] < 0) return 0;
  const Op& op = g.ops[static_cast<size_t>(producers[v])];
  if (is_accumulator(op.kind)) return 1;
  return op.stage == Stage::post ? 2 : 0;
}

void local_edits(const Graph& g, std::vector<Edit>& out) {
  const auto producers = g.producers();
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    const std::string res = op.outputs.empty() ? "?" : vname(g, op.outputs[0]);
    const char* kname = op_info(op.kind).name;
    auto edit = [&](std::string what, const std::function<void(Graph&)>& fn) {
      Graph c = g;
      fn(c);
      out.emplace_back(fmt::format("{} '{}': {}", kname, res, what), std::move(c));
    };
    if (is_binary(op.kind)) {
      for (OpKind k : binary_ops())
        if (k != op.kind)
          edit(fmt::format("-> {}", op_info(k).name), [&](Graph& c) { c.ops[i].kind = k; });
    }
    if ((is_binary(op.kind) || op.kind == OpKind::matmul) && op.inputs.size() == 2)
      edit("operands swapped",
           [&](Graph& c) { std::swap(c.ops[i].inputs[0], c.ops[i].inputs[1]); });
    const std::vector<OpKind>& unops = plain_unary_ops();
    if (auto it = std::find(unops.begin(), unops.end(), op.kind); it != unops.end()) {
      const auto at = static_cast<size_t>(it - unops.begin());
      for (size_t d = 1; d <= 2; ++d) {
        OpKind k = unops[(at + d) % unops.size()];
        edit(fmt::format("-> {}", op_info(k).name), [&](Graph& c) { c.ops[i].kind = k; });
      }
    }
    const AttrSpec* constant = rational_attr(op_info(op.kind));
    if (constant && op_info(op.kind).op_class == OpClass::unary)  // scale's factor, shift's offset
      edit(fmt::format("{} doubled", constant->name), [&](Graph& c) {
        const Rational& f = c.ops[i].attrs.get_rational(constant->name);
        c.ops[i].attrs.set(constant->name,
                           *Rational::make(static_cast<__int128>(f.num()) * 2, f.den()));
      });
    if (op.kind == OpKind::sum || op.kind == OpKind::mean || op.kind == OpKind::max) {
      for (OpKind k : {OpKind::sum, OpKind::mean, OpKind::max})
        if (k != op.kind)
          edit(fmt::format("-> {}", op_info(k).name), [&](Graph& c) { c.ops[i].kind = k; });
      const auto rank = static_cast<int64_t>(g.type(op.inputs[0]).shape.size());
      for (int64_t d = 0; d < rank; ++d)
        if (d != op.attrs.get_int("dim"))
          edit(fmt::format("dim -> {}", d), [&](Graph& c) { c.ops[i].attrs.set("dim", d); });
    }
    if (op.kind == OpKind::accum_sum)
      edit("-> accum_max", [&](Graph& c) { c.ops[i].kind = OpKind::accum_max; });
    if (op.kind == OpKind::accum_max)
      edit("-> accum_sum", [&](Graph& c) { c.ops[i].kind = OpKind::accum_sum; });
    if (op.kind == OpKind::iter || op.kind == OpKind::save) {
      const char* key = op.kind == OpKind::iter ? "imap" : "omap";
      const auto rank = static_cast<int64_t>(g.type(op.inputs[0]).shape.size());
      const auto map = op.attrs.get_list(key);
      for (int gd = 0; gd < 3; ++gd)
        for (int64_t d = -1; d < rank; ++d)
          if (d != map[gd])
            edit(fmt::format("{}[{}] -> {}", key, gd, d), [&](Graph& c) {
              auto m = map;
              m[gd] = d;
              c.ops[i].attrs.set(key, m);
            });
      if (op.kind == OpKind::iter) {
        const int64_t f = op.attrs.get_int("fmap");
        for (int64_t d = -1; d < rank; ++d)
          if (d != f)
            edit(fmt::format("fmap -> {}", d), [&](Graph& c) { c.ops[i].attrs.set("fmap", d); });
      }
    }
    // Another value of the same type as an operand (e.g. the other weight matrix).
    for (size_t operand = 0; operand < op.inputs.size(); ++operand) {
      if (op.kind == OpKind::kernel) break;
      for (size_t v = 0; v < g.values.size(); ++v) {
        const auto id = static_cast<ValueId>(v);
        const bool earlier = producers[id] < 0
                                 ? std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end()
                                 : producers[id] < static_cast<int>(i);
        if (id == op.inputs[operand] || !earlier || !(g.type(id) == g.type(op.inputs[operand])) ||
            value_class(g, producers, id) != value_class(g, producers, op.inputs[operand]))
          continue;
        edit(fmt::format("operand {} reads '{}'", operand, vname(g, id)),
             [&](Graph& c) { c.ops[i].inputs[operand] = id; });
      }
    }
    if (op.kind == OpKind::reshape) {
      auto shape = op.attrs.get_list("shape");
      for (size_t d = 0; d + 1 < shape.size(); ++d)
        if (shape[d] != shape[d + 1])
          edit(fmt::format("shape dims {} and {} swapped", d, d + 1), [&](Graph& c) {
            auto s2 = shape;
            std::swap(s2[d], s2[d + 1]);
            c.ops[i].attrs.set("shape", s2);
          });
    }
    // Drop: consumers read an operand instead of the result.
    if ((is_unary(op.kind) || is_binary(op.kind) || op.kind == OpKind::matmul ||
         op.kind == OpKind::rms_norm || op.kind == OpKind::softmax) &&
        op.outputs.size() == 1)
      for (size_t operand = 0; operand < op.inputs.size(); ++operand)
        edit(fmt::format("dropped (uses read operand {})", operand), [&](Graph& c) {
          ValueId from = c.ops[i].outputs[0], to = c.ops[i].inputs[operand];
          replace_uses(c, from, to, i);
          c.ops.erase(c.ops.begin() + static_cast<std::ptrdiff_t>(i));
        });
    if (op.kind == OpKind::scale)
      edit("factor negated", [&](Graph& c) {
        const Rational& f = c.ops[i].attrs.get_rational("factor");
        c.ops[i].attrs.set("factor", *Rational::make(-static_cast<__int128>(f.num()), f.den()));
      });
    if (op.kind == OpKind::rms_norm)
      edit("eps -> 1/2", [&](Graph& c) { c.ops[i].attrs.set("eps", *Rational::make(1, 2)); });
    if (op.kind == OpKind::sum || op.kind == OpKind::mean || op.kind == OpKind::max)
      edit("to -> 2", [&](Graph& c) { c.ops[i].attrs.set("to", int64_t{2}); });
    // A binary operator applied again with its second operand: op(op(a, b), b).
    if (is_binary(op.kind) && op.outputs.size() == 1)
      edit("applied twice", [&](Graph& c) {
        ValueId first = c.ops[i].outputs[0];
        ValueId second = new_value(c, vname(c, first), c.type(first));
        Op dup = c.ops[i];
        dup.inputs = {first, c.ops[i].inputs[1]};
        dup.outputs = {second};
        replace_uses(c, first, second, i);
        c.ops.insert(c.ops.begin() + static_cast<std::ptrdiff_t>(i) + 1, dup);
      });
    // An operand negated or squared: an operator inserted in front of this one.
    if (is_binary(op.kind) || op.kind == OpKind::matmul)
      for (size_t operand = 0; operand < op.inputs.size(); ++operand)
        for (OpKind k : {OpKind::scale, OpKind::sqr})
          edit(fmt::format("operand {} {}", operand, k == OpKind::sqr ? "squared" : "negated"),
               [&](Graph& c) {
                 ValueId x = c.ops[i].inputs[operand];
                 ValueId y = new_value(c, vname(c, x), c.type(x));
                 Op ins;
                 ins.kind = k;
                 ins.inputs = {x};
                 ins.outputs = {y};
                 if (k == OpKind::scale) ins.attrs.set("factor", Rational(-1));
                 ins.stage = c.ops[i].stage;
                 c.ops[i].inputs[operand] = y;
                 c.ops.insert(c.ops.begin() + static_cast<std::ptrdiff_t>(i), ins);
               });
    // Duplicate: the operator applied twice.
    if (is_unary(op.kind) && op.outputs.size() == 1)
      edit("applied twice", [&](Graph& c) {
        ValueId first = c.ops[i].outputs[0];
        ValueId second = new_value(c, vname(c, first), c.type(first));
        Op dup = c.ops[i];
        dup.inputs = {first};
        dup.outputs = {second};
        replace_uses(c, first, second, i);
        c.ops.insert(c.ops.begin() + static_cast<std::ptrdiff_t>(i) + 1, dup);
      });
    // Division moved across the sum or product that produces its numerator.
    if (op.kind == OpKind::div && producers[op.inputs[0]] >= 0) {
      const int pi = producers[op.inputs[0]];
      const Op& num = g.ops[static_cast<size_t>(pi)];
      if ((num.kind == OpKind::add || num.kind == OpKind::sub || num.kind == OpKind::matmul) &&
          num.outputs.size() == 1)
        for (size_t operand = 0; operand < 2; ++operand)
          edit(fmt::format("division moved onto operand {} of '{}'", operand,
                           vname(g, num.outputs[0])),
               [&](Graph& c) {
                 // num' = num with operand divided; the div op becomes the new numerator op.
                 Op moved = c.ops[static_cast<size_t>(pi)];
                 ValueId part = moved.inputs[operand];
                 ValueId q = new_value(c, vname(c, part), c.type(part));
                 Op d = c.ops[i];
                 d.inputs = {part, c.ops[i].inputs[1]};
                 d.outputs = {q};
                 moved.inputs[operand] = q;
                 moved.outputs = c.ops[i].outputs;
                 moved.stage = c.ops[i].stage;
                 c.ops[i] = moved;
                 c.ops.insert(c.ops.begin() + static_cast<std::ptrdiff_t>(i), d);
               });
    }
  }
  if (g.level == Level::block) {
    for (int64_t loop : {g.loop * 2, g.loop / 2})
      if (loop >= 1) {
        Graph c = g;
        c.loop = loop;
        out.emplace_back(fmt::format("loop {} -> {}", g.loop, loop), std::move(c));
      }
    for (int d = 0; d < 3; ++d)
      for (int64_t n : {g.grid[d] * 2, g.grid[d] / 2})
        if (n >= 1) {
          Graph c = g;
          c.grid[d] = n;
          out.emplace_back(fmt::format("grid[{}] {} -> {}", d, g.grid[d], n), std::move(c));
        }
  }
}

void all_edits(const Graph& g, std::vector<Edit>& out) {
  local_edits(g, out);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (!g.ops[i].body) continue;
    std::vector<Edit> inner;
    all_edits(*g.ops[i].body, inner);
    for (auto& [what, body] : inner) {
      Graph c = g;
      c.ops[i].body = std::make_shared<const Graph>(std::move(body));
      out.emplace_back(
          fmt::format("{} '{}' > {}", op_info(g.ops[i].kind).name,
                      g.ops[i].outputs.empty() ? "?" : vname(g, g.ops[i].outputs[0]), what),
          std::move(c));
    }
  }
}

}  // namespace

std::vector<Mutant> mutants(const Graph& g) {
  std::vector<Edit> edits;
  all_edits(g, edits);
  std::set<std::string> seen = {print_graph(g, false)};
  // Mutants of a valid program must be valid programs (stages, path rule, divisibility, ...).
  const Target target;
  const bool must_validate = check_graph(g, target).empty();
  std::vector<Mutant> out;
  for (auto& [what, m] : edits) {
    std::string text;
    try {
      text = print_graph(m, false);
      Graph parsed = parse_graph(text, "<mutant>");
      if (!seen.insert(print_graph(parsed, false)).second) continue;
      if (must_validate && !check_graph(parsed, target).empty()) continue;
      out.push_back(Mutant{what, std::move(parsed)});
    } catch (const UserError&) {
      // Ill-typed or ill-formed: not a program, so not a mutant.
    } catch (const InternalError&) {
      // The printer may refuse a graph broken beyond printing; skip it likewise.
    }
  }
  return out;
}

}  // namespace weft
