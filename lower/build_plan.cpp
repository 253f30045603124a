// Builds the initial kernel plan of a kernel graph.
#include "lower/build_plan.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "core/error.h"
#include "ir/expand_composites.h"

namespace weft {

namespace {

class Builder {
 public:
  // Composites run as the unfused primitives a framework would launch, one kernel each.
  Builder(const Graph& g, const Target& t)
      : expanded_(expand_composites(g)), g_(expanded_), cpu_(t.kind == TargetKind::cpu) {
    plan_.name = g.name;
    plan_.target = t.name;
  }

  ProgramPlan build() {
    WEFT_CHECK(g_.level == Level::kernel, "build_plan needs a kernel graph");
    std::set<ValueId> ins(g_.inputs.begin(), g_.inputs.end());
    std::set<ValueId> outs(g_.outputs.begin(), g_.outputs.end());
    for (ValueId id = 0; id < static_cast<ValueId>(g_.values.size()); ++id) {
      const Value& v = g_.value(id);
      TensorRole role = ins.count(id)    ? TensorRole::input
                        : outs.count(id) ? TensorRole::output
                                         : TensorRole::temp;
      add_tensor(v.name, v.type, role);
    }
    for (ValueId id : g_.inputs) plan_.inputs.push_back(g_.value(id).name);
    for (ValueId id : g_.outputs) plan_.outputs.push_back(g_.value(id).name);
    plan_.interfaces = g_.interfaces;
    for (const Op& op : g_.ops) lower_op(op);
    return std::move(plan_);
  }

 private:
  DType storage(DType d) const { return cpu_ ? DType::f32 : d; }

  void add_tensor(const std::string& name, const TensorType& type, TensorRole role) {
    PlanBuffer b;
    b.name = name;
    b.space = MemSpace::device;
    b.role = role;
    b.dtype = storage(type.dtype);
    b.shape = type.shape;
    b.contiguous_dim = static_cast<int>(type.shape.size()) - 1;
    plan_.tensors.push_back(std::move(b));
  }

  void lower_op(const Op& op) {
    auto name = [&](ValueId id) { return g_.value(id).name; };
    if (op.kind == OpKind::kernel) {
      lower_kernel(op);
      return;
    }
    WEFT_CHECK(op.kind != OpKind::thread && op_info(op.kind).op_class != OpClass::structure,
               "{} at kernel level", op_info(op.kind).name);
    WEFT_CHECK(op.outputs.size() == 1 || op.kind == OpKind::split, "multi-result {}",
               op_info(op.kind).name);
    KernelPlan k;
    k.name = fmt::format("k{}", plan_.kernels.size());
    k.library = true;
    Step s;
    s.kind = StepKind::call;
    s.op = op.kind;
    for (ValueId id : op.inputs) s.inputs.push_back(name(id));
    for (ValueId id : op.outputs) s.outputs.push_back(name(id));
    s.attrs = op.attrs;
    k.loop_steps.push_back(std::move(s));
    plan_.kernels.push_back(std::move(k));
  }

  void lower_kernel(const Op& op) {
    const Graph& body = *op.body;
    KernelPlan k;
    k.name = fmt::format("k{}", plan_.kernels.size());
    k.grid = body.grid;
    k.threads = body.threads;
    k.loop = body.loop;
    // Names inside the block: operands by their kernel-level names, saves by the results' names.
    std::map<ValueId, std::string> names;
    for (size_t i = 0; i < body.inputs.size(); ++i)
      names[body.inputs[i]] = g_.value(op.inputs[i]).name;
    for (size_t i = 0; i < body.outputs.size(); ++i)
      names[body.outputs[i]] = g_.value(op.outputs[i]).name;
    // GPU sum and max accumulators are f32 whatever the operands' dtype: summing many f16
    // partial products in f16 would lose the low bits of every later term.
    std::set<ValueId> f32_accumulators;
    for (const Op& bop : body.ops)
      if (!cpu_ && (bop.kind == OpKind::accum_sum || bop.kind == OpKind::accum_max))
        f32_accumulators.insert(bop.outputs.at(0));
    for (ValueId id = 0; id < static_cast<ValueId>(body.values.size()); ++id) {
      if (names.count(id)) continue;
      names[id] = body.value(id).name;
      TensorType type = body.type(id);
      if (f32_accumulators.count(id)) type.dtype = DType::f32;
      add_buffer(k, body.value(id).name, type, MemSpace::shared);
    }
    auto nm = [&](ValueId id) { return names.at(id); };
    for (const Op& bop : body.ops) {
      Step s;
      s.op = bop.kind;
      s.attrs = bop.attrs;
      for (ValueId id : bop.inputs) s.inputs.push_back(nm(id));
      for (ValueId id : bop.outputs) s.outputs.push_back(nm(id));
      if (bop.kind == OpKind::iter) {
        s.kind = StepKind::load;
      } else if (bop.kind == OpKind::save) {
        s.kind = StepKind::store;
      } else if (is_accumulator(bop.kind)) {
        s.kind = StepKind::accum;
      } else if (bop.kind == OpKind::thread) {
        s.kind = StepKind::thread;
        s.body = thread_body(k, bop, s.inputs, s.outputs);
      } else {
        s.kind = StepKind::compute;
      }
      // Accumulators run in the loop but their results belong to the post stage.
      (bop.stage == Stage::loop ? k.loop_steps : k.post_steps).push_back(std::move(s));
    }
    plan_.kernels.push_back(std::move(k));
  }

  std::vector<Step> thread_body(KernelPlan& k, const Op& top, const std::vector<std::string>& ins,
                                const std::vector<std::string>& outs) {
    const Graph& tg = *top.body;
    std::map<ValueId, std::string> names;
    for (size_t i = 0; i < tg.inputs.size(); ++i) names[tg.inputs[i]] = ins[i];
    for (size_t i = 0; i < tg.outputs.size(); ++i) {
      WEFT_CHECK(!names.count(tg.outputs[i]), "thread graph output {} is one of its inputs",
                 tg.value(tg.outputs[i]).name);
      names[tg.outputs[i]] = outs[i];
    }
    for (ValueId id = 0; id < static_cast<ValueId>(tg.values.size()); ++id) {
      if (names.count(id)) continue;
      names[id] = fmt::format("{}.{}", outs[0], tg.value(id).name);
      add_buffer(k, names[id], tg.type(id), MemSpace::reg);
    }
    std::vector<Step> steps;
    for (const Op& op : tg.ops) {
      Step s;
      s.kind = StepKind::compute;
      s.op = op.kind;
      s.attrs = op.attrs;
      for (ValueId id : op.inputs) s.inputs.push_back(names.at(id));
      for (ValueId id : op.outputs) s.outputs.push_back(names.at(id));
      steps.push_back(std::move(s));
    }
    return steps;
  }

  void add_buffer(KernelPlan& k, const std::string& name, const TensorType& type, MemSpace space) {
    PlanBuffer b;
    b.name = name;
    b.space = space;
    b.dtype = storage(type.dtype);
    b.shape = type.shape;
    b.contiguous_dim = static_cast<int>(type.shape.size()) - 1;
    k.buffers.push_back(std::move(b));
  }

  Graph expanded_;
  const Graph& g_;
  bool cpu_;
  ProgramPlan plan_;
};

}  // namespace

ProgramPlan build_plan(const Graph& graph, const Target& target) {
  return Builder(graph, target).build();
}

}  // namespace weft
