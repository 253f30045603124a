// Kernel plans to tasks: the read and written boxes follow the CPU emitter's load and store
// offsets (codegen/cpu/emit_cpu.cpp), so a task's accesses are exactly the elements its block
// function touches in device memory.
#include "mpk/passes/decompose.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace weft {

namespace {

Box full_box(const Shape& shape) {
  return Box{std::vector<int64_t>(shape.size(), 0),
             std::vector<int64_t>(shape.begin(), shape.end())};
}

void add_access(std::vector<Access>& list, Access a) {
  if (std::find(list.begin(), list.end(), a) == list.end()) list.push_back(std::move(a));
}

}  // namespace

TaskGraph plan_tensors(const ProgramPlan& plan) {
  TaskGraph g;
  g.name = plan.name;
  for (const PlanBuffer& t : plan.tensors) {
    TgTensor tt{t.name, t.dtype, t.shape, t.contiguous_dim, TensorHome::workspace, t.offset};
    if (t.role == TensorRole::input) {
      tt.home = TensorHome::input;
      tt.slot = std::find(plan.inputs.begin(), plan.inputs.end(), t.name) - plan.inputs.begin();
    } else if (t.role == TensorRole::output) {
      tt.home = TensorHome::output;
      tt.slot = std::find(plan.outputs.begin(), plan.outputs.end(), t.name) - plan.outputs.begin();
    } else {
      WEFT_CHECK(t.offset >= 0, "temp tensor {} has no workspace offset", t.name);
    }
    g.tensors.push_back(std::move(tt));
  }
  return g;
}

TaskGraph decompose_plan(const ProgramPlan& plan, const std::set<std::string>& data_dependent) {
  TaskGraph g = plan_tensors(plan);
  std::map<std::string, int> tensor_index;
  for (size_t i = 0; i < g.tensors.size(); ++i)
    tensor_index[g.tensors[i].name] = static_cast<int>(i);
  auto tensor = [&](const std::string& name) {
    auto it = tensor_index.find(name);
    WEFT_CHECK(it != tensor_index.end(), "{} is not a device tensor of the plan", name);
    return it->second;
  };
  std::set<std::string> unknown = data_dependent;
  for (size_t ki = 0; ki < plan.kernels.size(); ++ki) {
    const KernelPlan& k = plan.kernels[ki];
    unknown.erase(k.name);
    Operator op{k.name, static_cast<int>(ki), k.library, k.grid, data_dependent.count(k.name) > 0};
    const int op_id = static_cast<int>(g.ops.size());
    if (k.library) {
      // One task, or a device-kernel call's share of its elements per task.
      const int64_t tasks = library_tasks(k);
      op.grid = {tasks, 1, 1};
      for (int64_t blk = 0; blk < tasks; ++blk) {
        Task t;
        t.op = op_id;
        t.bid = {blk, 0, 0};
        const Step& s = k.loop_steps.at(0);
        for (const std::string& n : s.inputs)
          add_access(t.reads, Access{tensor(n), full_box(g.tensors[tensor(n)].shape)});
        for (const std::string& n : s.outputs)
          add_access(t.writes, Access{tensor(n), full_box(g.tensors[tensor(n)].shape)});
        g.tasks.push_back(std::move(t));
      }
    } else {
      for (int64_t blk = 0; blk < k.num_blocks(); ++blk) {
        Task t;
        t.op = op_id;
        t.bid = {blk % k.grid[0], (blk / k.grid[0]) % k.grid[1], blk / (k.grid[0] * k.grid[1])};
        for (const std::vector<Step>* steps : {&k.loop_steps, &k.post_steps}) {
          for (const Step& s : *steps) {
            if (s.kind == StepKind::load) {
              const int ti = tensor(s.inputs[0]);
              const Shape& src = g.tensors[ti].shape;
              const Shape& tile = k.find_buffer(s.outputs[0])->shape;
              auto imap = s.attrs.get_list("imap");
              int64_t fmap = s.attrs.get_int("fmap");
              Box b{std::vector<int64_t>(src.size(), 0), {}};
              for (int gd = 0; gd < 3; ++gd)
                if (imap[gd] >= 0) b.lo[imap[gd]] += t.bid[gd] * (src[imap[gd]] / k.grid[gd]);
              for (size_t d = 0; d < src.size(); ++d)
                b.hi.push_back(b.lo[d] + tile[d] * (static_cast<int64_t>(d) == fmap ? k.loop : 1));
              add_access(t.reads, Access{ti, std::move(b)});
            } else if (s.kind == StepKind::store) {
              const int ti = tensor(s.outputs[0]);
              const Shape& tile = k.find_buffer(s.inputs[0])->shape;
              auto omap = s.attrs.get_list("omap");
              Box b{std::vector<int64_t>(tile.size(), 0), {}};
              for (int gd = 0; gd < 3; ++gd)
                if (omap[gd] >= 0) b.lo[omap[gd]] += t.bid[gd] * tile[omap[gd]];
              for (size_t d = 0; d < tile.size(); ++d) b.hi.push_back(b.lo[d] + tile[d]);
              add_access(t.writes, Access{ti, std::move(b)});
            }
          }
        }
        g.tasks.push_back(std::move(t));
      }
    }
    g.ops.push_back(std::move(op));
  }
  if (!unknown.empty())
    throw UserError(
        fmt::format("'{}' is not a kernel of {} (data-dependent operators name plan "
                    "kernels: k0, k1, ...)",
                    *unknown.begin(), plan.name));
  return g;
}

}  // namespace weft
