// predict(): walks the kernel graph in launch order and sums the kernels' predicted times.
#include "cost/cost_model.h"

#include "cost/block_cost.h"
#include "cost/library_cost.h"

namespace weft {

std::string_view bound_name(Bound b) {
  switch (b) {
    case Bound::memory:
      return "memory";
    case Bound::compute:
      return "compute";
    case Bound::launch:
      return "launch";
  }
  return "?";
}

int CostReport::kernel_launches() const {
  int n = 0;
  for (const KernelCost& k : kernels) n += k.launched ? 1 : 0;
  return n;
}

CostReport predict(const Graph& g, const Target& target) {
  if (g.level != Level::kernel)
    throw UserError(g.loc, "the cost model prices kernel graphs; this is a " +
                               std::string(level_name(g.level)) + " graph");
  CostReport r;
  r.target = target.name;
  r.kernels.reserve(g.ops.size());
  for (const Op& op : g.ops) {
    r.kernels.push_back(op.kind == OpKind::kernel ? block_kernel_cost(g, op, target)
                                                  : library_kernel_cost(g, op, target));
    r.total_s += r.kernels.back().time_s;
  }
  return r;
}

}  // namespace weft
