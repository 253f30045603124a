// Lifetime analysis for memory planning and the no-overlap checker.
#include "lower/lifetimes.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace weft {

std::vector<LiveBuffer> shared_lifetimes(const KernelPlan& k) {
  int loop_levels = 0;
  for (const Step& s : k.loop_steps) loop_levels = std::max(loop_levels, s.depth + 1);
  std::map<std::string, LiveBuffer> live;
  for (const PlanBuffer& b : k.buffers)
    if (b.space == MemSpace::shared)
      live[b.name] = LiveBuffer{b.name, footprint_bytes(k, b), -2, -2, b.offset};
  auto touch = [&](const std::string& name, int level, bool def) {
    auto it = live.find(name);
    if (it == live.end()) return;
    LiveBuffer& lb = it->second;
    if (def && lb.begin == -2) lb.begin = level;
    lb.end = std::max(lb.end, level);
  };
  for (int stage = 0; stage < 2; ++stage) {
    int base = stage == 0 ? 0 : loop_levels;
    for (const Step& s : stage == 0 ? k.loop_steps : k.post_steps) {
      for (const std::string& in : s.inputs) touch(in, base + s.depth, false);
      for (const std::string& out : s.outputs) {
        if (s.kind == StepKind::accum && s.in_registers) {
          // Written from registers once the loop is over (after its last barrier).
          touch(out, loop_levels, true);
        } else if (s.kind == StepKind::accum || (s.kind == StepKind::load && s.hoisted)) {
          // Written before the loop (initialized, or loaded once) and read by every iteration.
          touch(out, -1, true);
          touch(out, loop_levels - 1, false);
        } else {
          touch(out, base + s.depth, true);
        }
      }
    }
  }
  std::vector<LiveBuffer> out;
  for (const PlanBuffer& b : k.buffers) {
    if (b.space != MemSpace::shared) continue;
    LiveBuffer lb = live.at(b.name);
    if (lb.begin == -2) lb.begin = lb.end = std::max(lb.end, 0);  // never written: keep a slot
    lb.end = std::max(lb.end, lb.begin);
    if (is_pipelined(k, b.name)) {
      // Loads for later iterations land in the other slots at any level of the loop.
      lb.begin = 0;
      lb.end = std::max(lb.end, loop_levels - 1);
    }
    out.push_back(lb);
  }
  return out;
}

std::vector<LiveBuffer> device_lifetimes(const ProgramPlan& p) {
  std::map<std::string, LiveBuffer> live;
  for (const PlanBuffer& t : p.tensors)
    if (t.role == TensorRole::temp) live[t.name] = LiveBuffer{t.name, t.bytes(), -1, -1, t.offset};
  auto touch = [&](const std::string& name, int k, bool def) {
    auto it = live.find(name);
    if (it == live.end()) return;
    if (def && it->second.begin < 0) it->second.begin = k;
    it->second.end = std::max(it->second.end, k);
  };
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const KernelPlan& k = p.kernels[i];
    int ki = static_cast<int>(i);
    for (const auto* steps : {&k.loop_steps, &k.post_steps})
      for (const Step& s : *steps) {
        // Device tensors are read by loads and library calls, written by stores and calls.
        if (s.kind == StepKind::load || s.kind == StepKind::call)
          for (const std::string& in : s.inputs) touch(in, ki, false);
        if (s.kind == StepKind::store || s.kind == StepKind::call)
          for (const std::string& o : s.outputs) touch(o, ki, true);
      }
  }
  std::vector<LiveBuffer> out;
  for (const PlanBuffer& t : p.tensors) {
    if (t.role != TensorRole::temp) continue;
    LiveBuffer lb = live.at(t.name);
    if (lb.begin < 0) lb.begin = 0;
    lb.end = std::max(lb.end, lb.begin);
    out.push_back(lb);
  }
  return out;
}

std::vector<std::string> check_shared_memory(const KernelPlan& kernel) {
  if (kernel.library) return {};
  return find_overlaps(shared_lifetimes(kernel), kernel.smem_bytes);
}

std::vector<std::string> check_device_memory(const ProgramPlan& plan) {
  return find_overlaps(device_lifetimes(plan), plan.workspace_bytes);
}

}  // namespace weft
