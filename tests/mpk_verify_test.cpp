// Property test of the MPK compiler on random programs, and mutation tests of its verifier.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/target.h"
#include "lower/pipeline.h"
#include "mpk/passes/decompose.h"
#include "mpk/passes/fuse_events.h"
#include "mpk/passes/linearize.h"
#include "mpk/passes/normalize.h"
#include "mpk/passes/pipeline.h"
#include "mpk/verify_tgraph.h"
#include "testing/random_graph.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");
WEFT_TEST_TIERS_OF("MpkProperty.*", "property");

namespace weft {
namespace {

// Random programs that lower for the CPU (a few exceed a limit and are skipped).
std::vector<ProgramPlan> random_plans(int count, uint64_t first_seed) {
  std::vector<ProgramPlan> plans;
  for (uint64_t seed = first_seed; static_cast<int>(plans.size()) < count; ++seed) {
    try {
      plans.push_back(lower_graph(random_graph(seed), target_by_name("cpu")));
    } catch (const UserError&) {
    }
    if (seed > first_seed + 4 * static_cast<uint64_t>(count)) break;
  }
  return plans;
}

bool same_reachability(const TaskGraph& before, const TaskGraph& after, size_t tasks) {
  auto a = task_reachability(before), b = task_reachability(after);
  for (size_t u = 0; u < tasks; ++u)
    for (size_t v = 0; v < tasks; ++v)
      if (reaches(a, u, v) != reaches(b, u, v)) return false;
  return true;
}

TEST(MpkProperty, ThousandRandomProgramsCompileToVerifiedGraphs) {
  auto plans = random_plans(1000, 1);
  ASSERT_EQ(plans.size(), 1000u);
  std::mt19937_64 rng(42);
  int64_t tasks = 0, empty = 0, multi_task = 0;
  for (const ProgramPlan& plan : plans) {
    std::set<std::string> dd;
    for (const KernelPlan& k : plan.kernels)
      if (rng() % 4 == 0) dd.insert(k.name);
    TaskGraph deps = analyze_dependencies(decompose_plan(plan, dd));
    TaskGraph fused = fuse_events(deps);
    ASSERT_TRUE(same_reachability(deps, fused, deps.tasks.size())) << plan.name;
    int64_t added = 0;
    TaskGraph normal = normalize_events(fused, &added);
    ASSERT_TRUE(same_reachability(fused, normal, fused.tasks.size())) << plan.name;
    TaskGraph linear = linearize_tasks(normal);
    for (size_t e = 0; e < linear.events.size(); ++e) {
      if (linear.events[e].first < 0) continue;
      for (int t = linear.events[e].first; t <= linear.events[e].last; ++t)
        ASSERT_EQ(linear.tasks[t].waits[0], static_cast<int>(e)) << plan.name;
    }
    const Dispatch d = static_cast<Dispatch>(rng() % 3);
    TaskGraph assigned = assign_workers(linear, {static_cast<int>(1 + rng() % 8), d});
    auto problems = verify_task_graph(assigned);
    ASSERT_TRUE(problems.empty()) << plan.name << ": " << problems.front();
    tasks += static_cast<int64_t>(assigned.tasks.size());
    empty += added;
    multi_task += assigned.tasks.size() > 2;
  }
  // The generator's programs are not trivial: many tasks, some forks.
  EXPECT_GT(multi_task, 500);
  EXPECT_GT(empty, 0);
  RecordProperty("tasks", static_cast<int>(tasks));
}

// Mutants of compiled graphs, each flagged by the verifier.
TEST(MpkMutation, DroppedDependenciesMisorderedListsAndWrongNeedsAreAllFlagged) {
  auto plans = random_plans(200, 5000);
  std::mt19937_64 rng(7);
  int dropped = 0, misordered = 0, wrong_need = 0;
  for (const ProgramPlan& plan : plans) {
    TaskGraph deps = analyze_dependencies(decompose_plan(plan));
    auto finish = [](const TaskGraph& g) {
      return assign_workers(linearize_tasks(normalize_events(fuse_events(g))), {2, Dispatch::aot});
    };
    // A dropped dependency: one edge event of the reduced graph removed before fusion.
    std::vector<int> edge_events;
    for (size_t e = 2; e < deps.events.size(); ++e) edge_events.push_back(static_cast<int>(e));
    if (!edge_events.empty()) {
      const int e = edge_events[rng() % edge_events.size()];
      TaskGraph m = deps;
      for (Task& t : m.tasks) {
        std::erase(t.triggers, e);
        std::erase(t.waits, e);
        if (t.waits.empty()) t.waits = {kBeginEvent};
        if (t.triggers.empty()) {
          t.triggers = {kEndEvent};
          ++m.events[kEndEvent].need;
        }
      }
      m.events[e].need = 0;  // an orphan event nobody waits for; fusion keeps it harmlessly
      TaskGraph done = finish(m);
      auto problems = verify_task_graph(done);
      ASSERT_FALSE(problems.empty()) << plan.name << ": dropped e" << e;
      EXPECT_NE(problems[0].find("no path of events"), std::string::npos) << problems[0];
      ++dropped;
    }
    TaskGraph good = finish(deps);
    ASSERT_TRUE(verify_task_graph(good).empty());
    for (size_t w = 0; w < good.worker_lists.size(); ++w) {
      if (good.worker_lists[w].size() < 2) continue;
      TaskGraph m = good;
      size_t i = rng() % (m.worker_lists[w].size() - 1);
      std::swap(m.worker_lists[w][i], m.worker_lists[w][i + 1]);
      EXPECT_FALSE(verify_task_graph(m).empty()) << plan.name << ": swapped in w" << w;
      ++misordered;
    }
    for (size_t e = 1; e < good.events.size(); ++e) {
      TaskGraph m = good;
      m.events[e].need += (rng() % 2) ? 1 : -1;
      EXPECT_FALSE(verify_task_graph(m).empty()) << plan.name << ": need of e" << e;
      ++wrong_need;
    }
  }
  EXPECT_GT(dropped, 50);
  EXPECT_GT(misordered, 50);
  EXPECT_GT(wrong_need, 200);
}

}  // namespace
}  // namespace weft
