// Depth-ordered scheduling of block steps.
#include "lower/schedule.h"

#include <algorithm>
#include <map>

namespace weft {

namespace {

std::vector<Step> schedule_stage(const std::vector<Step>& in) {
  std::vector<Step> steps;
  for (const Step& s : in)
    if (s.kind != StepKind::barrier) steps.push_back(s);
  std::map<std::string, int> depth_of;
  for (Step& s : steps) {
    int d = 0;
    for (const std::string& x : s.inputs) {
      auto it = depth_of.find(x);
      if (it != depth_of.end()) d = std::max(d, it->second + 1);
    }
    s.depth = d;
    for (const std::string& o : s.outputs) depth_of[o] = d;
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const Step& a, const Step& b) { return a.depth < b.depth; });
  std::vector<Step> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    out.push_back(steps[i]);
    if (i + 1 == steps.size() || steps[i + 1].depth != steps[i].depth) {
      Step b;
      b.kind = StepKind::barrier;
      b.depth = steps[i].depth;
      out.push_back(b);
    }
  }
  return out;
}

}  // namespace

ProgramPlan schedule_by_depth(const ProgramPlan& plan) {
  ProgramPlan p = plan;
  for (KernelPlan& k : p.kernels) {
    if (k.library) continue;
    k.loop_steps = schedule_stage(k.loop_steps);
    k.post_steps = schedule_stage(k.post_steps);
    // The post stage's last barrier guards nothing: stores are the block's last act.
    if (!k.post_steps.empty() && k.post_steps.back().kind == StepKind::barrier)
      k.post_steps.pop_back();
  }
  return p;
}

}  // namespace weft
