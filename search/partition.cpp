// Partition rules (operators outside the search, size) and the stitching of the parts' µGraphs.
#include "search/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace weft {
namespace {

bool has(const std::vector<OpKind>& kinds, OpKind k) {
  return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
}

// The part made of program ops [begin, end).
SubProgram make_part(const Graph& program, int begin, int end, std::string rule, bool searched,
                     int index) {
  std::vector<int> ops;
  for (int i = begin; i < end; ++i) ops.push_back(i);
  SubProgram part = subprogram_of(program, ops, fmt::format("{}.part{}", program.name, index + 1));
  part.rule = std::move(rule);
  part.searched = searched;
  return part;
}

// Values produced before op `cut` and read at or after it (or program outputs): what crosses a
// cut there.
int crossing(const Graph& program, const std::vector<std::vector<int>>& consumers, int begin,
             int cut) {
  int n = 0;
  for (int i = begin; i < cut; ++i)
    for (ValueId v : program.ops[i].outputs) {
      bool crosses = false;
      for (int c : consumers[v]) crosses |= c >= cut;
      n += crosses;
    }
  return n;
}

}  // namespace

bool fusable_elementwise(OpKind kind) {
  const OpInfo& info = op_info(kind);
  return is_elementwise(kind) &&
         (info.fusion == FusionPattern::elementwise || info.fusion == FusionPattern::broadcast) &&
         (info.levels & kAtKernel) && (info.levels & kAtBlock);
}

SearchConfig with_program_operators(SearchConfig config, const Graph& program) {
  for (const Op& op : program.ops) {
    if (!fusable_elementwise(op.kind)) continue;
    for (std::vector<OpKind>* set : {&config.kernel_ops, &config.block_ops})
      if (!has(*set, op.kind)) set->push_back(op.kind);
  }
  return config;
}

bool searchable(const Op& op, const SearchConfig& config) {
  if (op.kind == OpKind::kernel) return true;  // graph-defined kernels of the input: inlined
  auto in_sets = [&](OpKind k) { return has(config.kernel_ops, k) || has(config.block_ops, k); };
  if (op.kind == OpKind::mean) return in_sets(OpKind::sum) && in_sets(OpKind::scale);
  return in_sets(op.kind);
}

std::vector<SubProgram> partition_program(const Graph& program, const SearchConfig& config) {
  const int n = static_cast<int>(program.ops.size());
  // Ops [begin, end) fit the search: as that many kernel operators, or as one graph-defined
  // kernel whose block graph holds them and an accumulator per reduction or matmul.
  auto fits = [&](int begin, int end) {
    int ops = end - begin, accumulators = 0;
    for (int i = begin; i < end; ++i) {
      OpClass c = op_info(program.ops[i].kind).op_class;
      accumulators += c == OpClass::reduction || c == OpClass::matmul;
    }
    return ops <= config.max_kernel_ops || ops + accumulators <= config.max_block_ops;
  };
  bool all_searchable = true;
  for (const Op& op : program.ops) all_searchable &= searchable(op, config);
  std::vector<SubProgram> parts;
  if (!config.partition || (all_searchable && fits(0, n))) {
    parts.push_back(make_part(program, 0, n, "whole", true, 0));
    parts.back().graph.name = program.name;
    return parts;
  }
  std::vector<std::vector<int>> consumers = program.consumers();
  for (int i = 0; i < n;) {
    if (!searchable(program.ops[i], config)) {
      parts.push_back(make_part(program, i, i + 1, "operator outside the search", false,
                                static_cast<int>(parts.size())));
      ++i;
      continue;
    }
    int run_end = i;
    while (run_end < n && searchable(program.ops[run_end], config)) ++run_end;
    // Cut the run into pieces that fit: each piece as long as it can be among the cuts with the
    // fewest values crossing.
    while (i < run_end) {
      int longest = i + 1;
      while (longest < run_end && fits(i, longest + 1)) ++longest;
      int best = longest, best_cross = crossing(program, consumers, i, best);
      for (int end = best - 1; end > i && best != run_end; --end) {
        int c = crossing(program, consumers, i, end);
        if (c < best_cross) {
          best = end;
          best_cross = c;
        }
      }
      parts.push_back(make_part(program, i, best, "size", true, static_cast<int>(parts.size())));
      i = best;
    }
  }
  return parts;
}

SubProgram subprogram_of(const Graph& program, const std::vector<int>& ops,
                         const std::string& name) {
  SubProgram part;
  std::vector<int> producer = program.producers();
  std::vector<std::vector<int>> consumers = program.consumers();
  std::vector<bool> inside(program.ops.size(), false);
  for (int i : ops) inside.at(static_cast<size_t>(i)) = true;
  GraphBuilder b(Level::kernel, name);
  std::vector<ValueId> map(program.values.size(), -1);
  for (int i : ops) {
    part.ops.push_back(i);
    const Op& op = program.ops[i];
    std::vector<ValueId> ins;
    for (ValueId v : op.inputs) {
      WEFT_CHECK(map[v] >= 0 || producer[v] < 0 || !inside[producer[v]],
                 "subprogram ops out of order at op {}", i);
      if (map[v] < 0) {
        map[v] = b.add_input(program.value(v).name, program.type(v));
        part.inputs.push_back(v);
      }
      ins.push_back(map[v]);
    }
    std::vector<std::string> names;
    for (ValueId v : op.outputs) names.push_back(program.value(v).name);
    std::vector<ValueId> outs = op.body ? b.add_nested(op.kind, ins, *op.body, names, {}, op.stage)
                                        : b.add_op(op.kind, ins, op.attrs, names, {}, op.stage);
    for (size_t k = 0; k < outs.size(); ++k) map[op.outputs[k]] = outs[k];
  }
  for (int i : ops)
    for (ValueId v : program.ops[i].outputs) {
      bool used_outside =
          std::find(program.outputs.begin(), program.outputs.end(), v) != program.outputs.end();
      for (int c : consumers[v]) used_outside |= !inside[c];
      if (!used_outside) continue;
      b.add_output(map[v]);
      part.outputs.push_back(v);
    }
  part.graph = std::move(b).finish();
  return part;
}

Graph stitch(const Graph& program, const std::vector<SubProgram>& parts,
             const std::vector<Graph>& replacements) {
  WEFT_CHECK(parts.size() == replacements.size(), "{} parts, {} replacements", parts.size(),
             replacements.size());
  GraphBuilder b(Level::kernel, program.name);
  std::vector<ValueId> map(program.values.size(), -1);
  std::set<std::string> taken;
  for (const Value& v : program.values) taken.insert(v.name);
  for (ValueId v : program.inputs) map[v] = b.add_input(program.value(v).name, program.type(v));
  for (size_t p = 0; p < parts.size(); ++p) {
    const SubProgram& part = parts[p];
    const Graph& r = replacements[p];
    WEFT_CHECK(r.inputs.size() == part.inputs.size() && r.outputs.size() == part.outputs.size(),
               "replacement of part {} does not match its signature", p + 1);
    std::vector<ValueId> rmap(r.values.size(), -1);
    for (size_t k = 0; k < r.inputs.size(); ++k) rmap[r.inputs[k]] = map[part.inputs[k]];
    // A replacement's results keep the program's names; its other values get fresh ones.
    std::vector<std::string> name(r.values.size());
    for (size_t k = 0; k < r.outputs.size(); ++k)
      if (name[r.outputs[k]].empty()) name[r.outputs[k]] = program.value(part.outputs[k]).name;
    for (const Op& op : r.ops)
      for (ValueId v : op.outputs) {
        if (!name[v].empty()) continue;
        std::string n = r.value(v).name;
        for (int k = 1; taken.count(n); ++k) n = fmt::format("{}.{}", r.value(v).name, k);
        taken.insert(n);
        name[v] = n;
      }
    for (const Op& op : r.ops) {
      std::vector<ValueId> ins;
      for (ValueId v : op.inputs) ins.push_back(rmap[v]);
      std::vector<std::string> names;
      for (ValueId v : op.outputs) names.push_back(name[v]);
      std::vector<ValueId> outs;
      if (op.body) {
        // A kernel's results are named after its saves (docs/format.md): rename those too.
        Graph body = *op.body;
        if (op.kind == OpKind::kernel)
          for (size_t k = 0; k < body.outputs.size(); ++k)
            body.values[body.outputs[k]].name = names[k];
        outs = b.add_nested(op.kind, ins, std::move(body), names, {}, op.stage);
      } else {
        outs = b.add_op(op.kind, ins, op.attrs, names, {}, op.stage);
      }
      for (size_t k = 0; k < outs.size(); ++k) rmap[op.outputs[k]] = outs[k];
    }
    for (size_t k = 0; k < r.outputs.size(); ++k) map[part.outputs[k]] = rmap[r.outputs[k]];
  }
  for (ValueId v : program.outputs) b.add_output(map[v]);
  return std::move(b).finish();
}

}  // namespace weft
