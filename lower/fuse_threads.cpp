// Thread-graph fusion of elementwise chains.
#include "lower/fuse_threads.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "core/error.h"

namespace weft {

namespace {

bool fusible(const Step& s) {
  return s.kind == StepKind::compute && is_elementwise(s.op);
}

void fuse_stage(KernelPlan& k, std::vector<Step>& steps,
                const std::map<std::string, int>& readers) {
  size_t n = steps.size();
  std::vector<size_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < n; ++i)
    for (const std::string& o : steps[i].outputs) producer[o] = i;
  // root[i]: the group step i joins is represented by its consumer's root (union towards E).
  std::vector<bool> inner(n, false);
  for (size_t e = 0; e < n; ++e) {
    if (!fusible(steps[e])) continue;
    for (const std::string& in : steps[e].inputs) {
      auto it = producer.find(in);
      if (it == producer.end()) continue;
      size_t p = it->second;
      if (!fusible(steps[p]) || inner[p] || readers.at(in) != 1) continue;
      if (k.find_buffer(in)->shape != k.find_buffer(steps[e].outputs[0])->shape) continue;
      inner[p] = true;
      parent[find(p)] = find(e);
    }
  }
  std::map<size_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < n; ++i) groups[find(i)].push_back(i);
  std::vector<Step> out;
  for (size_t i = 0; i < n; ++i) {
    if (inner[i]) continue;  // emitted inside its root's thread step
    const std::vector<size_t>& members = groups[i];
    if (members.size() == 1) {
      out.push_back(std::move(steps[i]));
      continue;
    }
    Step t;
    t.kind = StepKind::thread;
    t.op = OpKind::thread;
    t.outputs = steps[i].outputs;
    std::set<std::string> internal;
    for (size_t m : members)
      if (m != i) internal.insert(steps[m].outputs[0]);
    for (size_t m : members)
      for (const std::string& in : steps[m].inputs)
        if (!internal.count(in) &&
            std::find(t.inputs.begin(), t.inputs.end(), in) == t.inputs.end())
          t.inputs.push_back(in);
    for (size_t m : members) t.body.push_back(std::move(steps[m]));
    for (const std::string& name : internal) k.find_buffer(name)->space = MemSpace::reg;
    out.push_back(std::move(t));
  }
  steps = std::move(out);
}

}  // namespace

ProgramPlan fuse_thread_graphs(const ProgramPlan& plan) {
  ProgramPlan p = plan;
  for (KernelPlan& k : p.kernels) {
    if (k.library) continue;
    std::map<std::string, int> readers;
    for (const auto* steps : {&k.loop_steps, &k.post_steps})
      for (const Step& s : *steps) {
        for (const std::string& in : s.inputs) ++readers[in];
        for (const std::string& o : s.outputs) readers.emplace(o, 0);
      }
    fuse_stage(k, k.loop_steps, readers);
    fuse_stage(k, k.post_steps, readers);
  }
  return p;
}

}  // namespace weft
