// Model-level partition: greedy growth of connected regions of searchable table operators in
// program order, their fixed-shape µGraphs, and their replacement by call_ugraph.
#include "driver/partition_module.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "ir/expand_composites.h"
#include "model/evaluate_at.h"
#include "search/partition.h"

namespace weft {

bool region_operator(OpKind kind, const std::vector<int>& operand_ranks,
                     const SearchConfig& config) {
  const OpInfo& info = op_info(kind);
  if ((info.levels & kAtKernel) == 0) return false;
  // The search takes a region's elementwise operators into its sets (with_program_operators).
  if (fusable_elementwise(kind)) return true;
  if (info.op_class != OpClass::composite) {
    Op op;
    op.kind = kind;
    return searchable(op, config);
  }
  // A composite joins when every operator of its expansion does. The expansion's operators do
  // not depend on the sizes, so a probe at size 2 per dim stands for every shape of this rank.
  try {
    GraphBuilder gb(Level::kernel, "probe");
    std::vector<ValueId> ids;
    for (size_t i = 0; i < operand_ranks.size(); ++i)
      ids.push_back(gb.add_input(fmt::format("x{}", i),
                                 TensorType{DType::f32, Shape(std::max(operand_ranks[i], 1), 2)}));
    for (ValueId o : gb.add_op(kind, ids)) gb.add_output(o);
    Graph probe = std::move(gb).finish();
    Graph expanded = composite_expansion(probe, probe.ops.at(0));
    for (const Op& op : expanded.ops)
      if (!searchable(op, config) && !fusable_elementwise(op.kind)) return false;
    return true;
  } catch (const UserError&) {
    return false;  // no probe of this rank exists: not taken
  }
}

namespace {

// Where a value is defined: {block, binding}; parameters before everything.
using Position = std::pair<int, int>;

std::vector<int> operand_ranks(const Binding& b, const std::map<std::string, MType>& types) {
  std::vector<int> ranks;
  for (const std::string& a : b.call.args) {
    auto it = types.find(a);
    ranks.push_back(it == types.end() ? 0 : it->second.rank);
  }
  return ranks;
}

// Whether the binding's result and operands are all of kernel dtypes.
bool kernel_typed(const Binding& b, const std::map<std::string, MType>& types) {
  if (!b.type.every_tensor(is_kernel_dtype)) return false;
  for (const std::string& a : b.call.args) {
    auto it = types.find(a);
    if (it == types.end() || !it->second.every_tensor(is_kernel_dtype)) return false;
  }
  return true;
}

void partition_function(const Function& f, const PartitionOptions& options,
                        std::vector<ModelRegion>& out) {
  std::map<std::string, MType> types = value_types(f);
  std::map<std::string, Position> defined;
  for (const Param& p : f.params) defined[p.name] = {-1, -1};
  for (size_t bi = 0; bi < f.blocks.size(); ++bi)
    for (size_t i = 0; i < f.blocks[bi].bindings.size(); ++i)
      defined[f.blocks[bi].bindings[i].var] = {static_cast<int>(bi), static_cast<int>(i)};

  std::vector<ModelRegion> regions;
  for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
    const Block& blk = f.blocks[bi];
    const int block = static_cast<int>(bi);
    std::map<std::string, size_t> made;  // value -> the region producing it
    for (size_t i = 0; i < blk.bindings.size(); ++i) {
      const Binding& b = blk.bindings[i];
      if (b.call.kind != CallKind::op) continue;
      auto kind = op_by_name(b.call.callee);
      if (!kind || !region_operator(*kind, operand_ranks(b, types), options.search)) continue;
      // µGraphs compute in f32, f16 and bf16: integer, bool and f64 tensors stay with the VM.
      if (!kernel_typed(b, types)) continue;
      // Join the latest region it reads from whose first binding all its other operands precede
      // (the call_ugraph stands there), unless that region is full.
      std::optional<size_t> join;
      for (const std::string& a : b.call.args) {
        auto it = made.find(a);
        if (it == made.end()) continue;
        ModelRegion& r = regions[it->second];
        Position first{block, r.bindings.front()};
        bool fits = std::all_of(b.call.args.begin(), b.call.args.end(), [&](const auto& x) {
          auto m = made.find(x);
          if (m != made.end() && m->second == it->second) return true;
          auto d = defined.find(x);
          return d != defined.end() && d->second < first;
        });
        if (!fits) continue;
        if (static_cast<int>(r.bindings.size()) >= options.max_region_ops) {
          r.cut = true;
          continue;
        }
        if (!join || it->second > *join) join = it->second;
      }
      if (!join) {
        ModelRegion r;
        r.function = f.name;
        r.block = block;
        regions.push_back(std::move(r));
        join = regions.size() - 1;
      }
      regions[*join].bindings.push_back(static_cast<int>(i));
      made[b.var] = *join;
    }
  }

  // Live-ins and live-outs.
  std::map<std::string, std::vector<Position>> readers;
  for (size_t bi = 0; bi < f.blocks.size(); ++bi)
    for (size_t i = 0; i < f.blocks[bi].bindings.size(); ++i)
      for (const std::string& v : reads_of(f.blocks[bi].bindings[i].call))
        readers[v].push_back({static_cast<int>(bi), static_cast<int>(i)});
  for (ModelRegion& r : regions) {
    const Block& blk = f.blocks[static_cast<size_t>(r.block)];
    std::set<std::string> inside;
    std::set<int> members(r.bindings.begin(), r.bindings.end());
    for (int i : r.bindings) {
      const Binding& b = blk.bindings[static_cast<size_t>(i)];
      for (const std::string& a : b.call.args)
        if (!inside.count(a) && std::find(r.inputs.begin(), r.inputs.end(), a) == r.inputs.end())
          r.inputs.push_back(a);
      inside.insert(b.var);
    }
    for (int i : r.bindings) {
      const std::string& v = blk.bindings[static_cast<size_t>(i)].var;
      bool escapes = v == f.result;
      for (const Position& p : readers[v])
        escapes = escapes || p.first != r.block || !members.count(p.second);
      if (escapes) r.outputs.push_back(v);
    }
    out.push_back(std::move(r));
  }
}

}  // namespace

std::vector<ModelRegion> partition_module(const Module& module, const PartitionOptions& options) {
  std::vector<ModelRegion> out;
  for (const Function& f : module.functions) partition_function(f, options, out);
  return out;
}

std::string regions_str(const std::vector<ModelRegion>& regions) {
  std::string out;
  std::map<std::string, int> per_function;
  std::vector<std::string> order;
  for (const ModelRegion& r : regions)
    if (per_function[r.function]++ == 0) order.push_back(r.function);
  for (const std::string& fn : order) {
    int n = per_function[fn];
    out += fmt::format("fn {}: {} region{}\n", fn, n, n == 1 ? "" : "s");
    int index = 0;
    for (const ModelRegion& r : regions) {
      if (r.function != fn) continue;
      out += fmt::format("  region {} [block {}, bindings {}]: {} operator{}, in {}, out {}{}\n",
                         index++, r.block, fmt::join(r.bindings, " "), r.bindings.size(),
                         r.bindings.size() == 1 ? "" : "s", fmt::join(r.inputs, " "),
                         fmt::join(r.outputs, " "), r.cut ? " (cut by size)" : "");
    }
  }
  return out;
}

std::optional<Graph> region_graph(const Module& module, const ModelRegion& region,
                                  const std::string& name, std::string* why) {
  const Function* f = module.find_function(region.function);
  WEFT_CHECK(f, "region of unknown function {}", region.function);
  std::map<std::string, MType> types = value_types(*f);
  auto fail = [&](const std::string& message) -> std::optional<Graph> {
    if (why) *why = message;
    return std::nullopt;
  };
  const Block& blk = f->blocks.at(static_cast<size_t>(region.block));
  GraphBuilder gb(Level::kernel, name);
  std::map<std::string, ValueId> ids;
  for (size_t i = 0; i < region.inputs.size(); ++i) {
    const std::string& v = region.inputs[i];
    auto t = tensor_type_at(types.at(v), {});
    if (!t) return fail(fmt::format("'{}' has type {}, not a fixed shape", v, types.at(v).str()));
    ids[v] = gb.add_input(fmt::format("x{}", i), *t);
  }
  int next = 0;
  for (int i : region.bindings) {
    const Binding& b = blk.bindings[static_cast<size_t>(i)];
    auto t = tensor_type_at(b.type, {});
    if (!t) return fail(fmt::format("'{}' has type {}, not a fixed shape", b.var, b.type.str()));
    std::vector<ValueId> args;
    for (const std::string& a : b.call.args) args.push_back(ids.at(a));
    Attrs attrs;
    try {
      attrs = evaluate_attrs(b.call.attrs, {}, b.call.loc);
    } catch (const UserError& e) {
      return fail(fmt::format("'{}': {}", b.var, e.message()));
    }
    auto outs = gb.add_op(*op_by_name(b.call.callee), args, attrs, {fmt::format("y{}", next++)},
                          b.call.loc);
    WEFT_CHECK(outs.size() == 1 && gb.graph().type(outs[0]) == *t,
               "region operator '{}' deduced as {} but the table gives another type", b.var,
               b.type.str());
    ids[b.var] = outs[0];
  }
  for (const std::string& v : region.outputs) gb.add_output(ids.at(v));
  return std::move(gb).finish();
}

namespace {

void collect_names(const std::vector<Binding>& bindings, std::set<std::string>& names) {
  for (const Binding& b : bindings) {
    names.insert(b.var);
    for (const IfBranch& br : b.call.branches) collect_names(br.bindings, names);
  }
}

}  // namespace

Module replace_regions(const Module& module, const std::vector<ModelRegion>& regions,
                       const std::vector<std::string>& ugraphs) {
  WEFT_CHECK(regions.size() == ugraphs.size(), "{} regions, {} µGraphs", regions.size(),
             ugraphs.size());
  Module out = module;
  for (Function& f : out.functions) {
    std::set<std::string> names;
    for (const Param& p : f.params) names.insert(p.name);
    for (const Block& blk : f.blocks) collect_names(blk.bindings, names);
    for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
      // binding index -> the region starting there; bindings other regions take
      std::map<int, size_t> starts;
      std::set<int> taken;
      for (size_t r = 0; r < regions.size(); ++r) {
        const ModelRegion& region = regions[r];
        if (region.function != f.name || region.block != static_cast<int>(bi) ||
            ugraphs[r].empty() || region.outputs.empty())
          continue;
        starts[region.bindings.front()] = r;
        taken.insert(region.bindings.begin(), region.bindings.end());
      }
      Block& blk = f.blocks[bi];
      std::vector<Binding> kept;
      for (size_t i = 0; i < blk.bindings.size(); ++i) {
        auto s = starts.find(static_cast<int>(i));
        if (s != starts.end()) {
          const ModelRegion& region = regions[s->second];
          Binding call;
          call.loc = blk.bindings[i].loc;
          call.call.loc = blk.bindings[i].call.loc;
          call.call.kind = CallKind::ugraph;
          call.call.callee = ugraphs[s->second];
          call.call.args = region.inputs;
          if (region.outputs.size() == 1) {
            call.var = region.outputs[0];
            kept.push_back(std::move(call));
          } else {
            std::string var = region.outputs[0] + ".region";
            for (int k = 2; names.count(var); ++k)
              var = fmt::format("{}.region{}", region.outputs[0], k);
            names.insert(var);
            call.var = var;
            kept.push_back(std::move(call));
            for (size_t k = 0; k < region.outputs.size(); ++k) {
              Binding item;
              item.var = region.outputs[k];
              item.loc = kept.back().loc;
              item.call.loc = kept.back().call.loc;
              item.call.kind = CallKind::item;
              item.call.args = {var};
              item.call.attrs["index"] = SymExpr(static_cast<int64_t>(k));
              kept.push_back(std::move(item));
            }
          }
        }
        if (!taken.count(static_cast<int>(i))) kept.push_back(blk.bindings[i]);
      }
      blk.bindings = std::move(kept);
    }
  }
  return out;
}

}  // namespace weft
