// Golden tests of every lowering pass (tests/golden/lower/, tests/golden.h), plus the properties
// each pass promises.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "codegen/cpu/emit_cpu.h"
#include "codegen/cuda/emit_cuda.h"
#include "core/target.h"
#include "ir/parser.h"
#include "lower/choose_cpu_blocking.h"
#include "lower/choose_stages.h"
#include "lower/fuse_accumulators.h"
#include "lower/hoist_loads.h"
#include "lower/lifetimes.h"
#include "lower/pipeline.h"
#include "lower/plan_device_memory.h"
#include "lower/plan_shared_memory.h"
#include "lower/plan_text.h"
#include "lower/schedule.h"
#include "lower/select_layouts.h"
#include "tests/golden.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");
WEFT_TEST_TIERS_OF("LowerGolden.*", "golden");
// Minutes under ASan at -O0 (runs in the optimized build: make test-heavy).
WEFT_TEST_TIERS_OF("HoistLoads.MarksInvariantLoadsOnlyAndFreesPipelineSlots", "heavy");

namespace weft {
namespace {

std::string golden_dir() {
  return weft::test::source_dir() + "/tests/golden/lower/";
}

std::string read(const std::string& path) {
  return test::read_text(path);
}

Graph load(const std::string& name) {
  std::string text = read(golden_dir() + name + ".weft");
  EXPECT_FALSE(text.empty()) << name;
  return parse_graph(text, name + ".weft");
}

const std::vector<std::string> kPrograms = {
    "rms_norm_linear.fused", "gated_mlp.fused", "gqa_attention.fused", "movement.fused",
    "rms_norm_linear",       "gated_mlp",       "gqa_attention"};

// `text` with its first `from` replaced by `to` (a test failure when there is none).
std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Every plan the tests know: each program, each target, after each pass.
std::vector<std::pair<std::string, ProgramPlan>> all_plans() {
  std::vector<std::pair<std::string, ProgramPlan>> out;
  for (const std::string& p : kPrograms) {
    Graph g = load(p);
    for (const char* t : {"cpu", "h100"})
      for (const std::string& pass : lowering_passes())
        out.emplace_back(p + "." + t + "." + pass, lower_graph(g, target_by_name(t), pass));
  }
  return out;
}

TEST(LowerGolden, EveryPassMatchesItsGoldenFile) {
  int compared = 0;
  for (const std::string& p : {std::string("rms_norm_linear.fused"), std::string("gated_mlp.fused"),
                               std::string("gqa_attention.fused"), std::string("movement.fused"),
                               std::string("rms_norm_linear")}) {
    Graph g = load(p);
    for (const char* t : {"cpu", "h100"}) {
      for (const std::string& pass : lowering_passes()) {
        // The GPU target is recorded after the passes whose result depends on the target.
        if (std::string(t) == "h100" && pass != "select-layouts" && pass != "fuse-accumulators" &&
            pass != "plan-device-memory")
          continue;
        std::string path = golden_dir() + p + "." + t + "." + pass + ".plan";
        EXPECT_TRUE(
            test::matches_golden(print_plan(lower_graph(g, target_by_name(t), pass)), path));
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 5 * 13);
}

TEST(PlanText, RoundTripsEveryPlan) {
  for (const auto& [name, plan] : all_plans()) {
    std::string text = print_plan(plan);
    ProgramPlan back = parse_plan(text, name);
    EXPECT_TRUE(back == plan) << name << "\n" << text;
    EXPECT_EQ(print_plan(back), text) << name;
  }
}

TEST(PlanText, RejectsMalformedText) {
  ProgramPlan p = lower_graph(load("gated_mlp.fused"), target_by_name("cpu"));
  std::string text = print_plan(p);
  EXPECT_THROW(parse_plan("nonsense"), UserError);
  auto broken = [&](const std::string& from, const std::string& to) {
    return replace_once(text, from, to);
  };
  EXPECT_THROW(parse_plan(broken("loop:", "loop")), UserError);
  EXPECT_THROW(parse_plan(broken("shared", "sharde")), UserError);
  EXPECT_THROW(parse_plan(broken("matmul", "matmull")), UserError);
  EXPECT_THROW(parse_plan(broken("omap=", "omapp=")), UserError);
  EXPECT_THROW(parse_plan(text.substr(0, text.size() - 4)), UserError);  // no final "end"
  try {
    parse_plan(broken("grid=[4,1,1]", "grid=[4,1]"), "x.plan");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.loc().file, "x.plan");
    EXPECT_GT(e.loc().line, 1);
  }
}

TEST(FuseThreads, ChainsMoveToRegistersAndKeepTheirInputs) {
  ProgramPlan p = lower_graph(load("rms_norm_linear.fused"), target_by_name("cpu"), "fuse-threads");
  const KernelPlan& k = p.kernels.at(0);
  // scale -> shift -> sqrt is one thread step; div broadcasts its result, so it stays apart.
  int threads = 0;
  for (const Step& s : k.post_steps)
    if (s.kind == StepKind::thread) {
      ++threads;
      ASSERT_EQ(s.body.size(), 3u);
      EXPECT_EQ(s.inputs, std::vector<std::string>{"sa"});
      EXPECT_EQ(s.outputs, std::vector<std::string>{"r"});
    }
  EXPECT_EQ(threads, 1);
  EXPECT_EQ(k.find_buffer("ms")->space, MemSpace::reg);
  EXPECT_EQ(k.find_buffer("e")->space, MemSpace::reg);
  EXPECT_EQ(k.find_buffer("r")->space, MemSpace::shared);
  // Kernel-level (library) ops are never fused: the unfused program stays unfused.
  ProgramPlan u = lower_graph(load("gated_mlp"), target_by_name("cpu"), "fuse-threads");
  EXPECT_EQ(u.kernels.size(), 4u);
}

TEST(Schedule, OrdersByDepthWithOneBarrierPerLevel) {
  for (const auto& [name, plan] : all_plans()) {
    if (name.find(".schedule") == std::string::npos) continue;
    for (const KernelPlan& k : plan.kernels) {
      if (k.library) continue;
      for (const auto* steps : {&k.loop_steps, &k.post_steps}) {
        std::map<std::string, int> produced_at;
        std::set<int> levels;
        int barriers = 0, last_depth = -1;
        for (const Step& s : *steps) {
          if (s.kind == StepKind::barrier) {
            ++barriers;
            continue;
          }
          EXPECT_GE(s.depth, last_depth) << name;
          last_depth = s.depth;
          levels.insert(s.depth);
          for (const std::string& in : s.inputs) {
            if (produced_at.count(in)) {
              EXPECT_LT(produced_at[in], s.depth) << name << " " << in;
            }
          }
          for (const std::string& o : s.outputs) produced_at[o] = s.depth;
        }
        // One barrier after each level (the post stage drops its final one).
        int want = static_cast<int>(levels.size()) - (steps == &k.post_steps ? 1 : 0);
        EXPECT_EQ(barriers, std::max(want, 0)) << name;
      }
    }
  }
}

TEST(SelectLayouts, IsNoWorseThanRowMajorAndHonoursConstraints) {
  for (const auto& [name, plan] : all_plans()) {
    if (name.find(".select-layouts") == std::string::npos) continue;
    const Target& t = target_by_name(name.find(".h100.") != std::string::npos ? "h100" : "cpu");
    ProgramPlan before = lower_graph(
        load(name.substr(0,
                         name.find(name.find(".h100.") != std::string::npos ? ".h100." : ".cpu."))),
        t, "fuse-threads");
    for (size_t i = 0; i < plan.kernels.size(); ++i) {
      const KernelPlan& k = plan.kernels[i];
      if (k.library) continue;
      EXPECT_LE(layout_cost(k, t), layout_cost(before.kernels[i], t)) << name;
      for (const PlanBuffer& b : k.buffers) {
        if (t.kind == TargetKind::cpu) {
          EXPECT_EQ(b.swizzle, 0) << name;
        }
      }
    }
  }
  // On the GPU, matmul operands with 128-byte rows (f16[256, 64] tiles of the full-size example)
  // are swizzled against bank conflicts; on the CPU nothing is.
  std::ifstream in(weft::test::source_dir() + "/examples/gated_mlp.fused.weft");
  std::stringstream ss;
  ss << in.rdbuf();
  Graph full = parse_graph(ss.str(), "gated_mlp.fused.weft");
  ProgramPlan g = lower_graph(full, target_by_name("h100"), "select-layouts");
  EXPECT_EQ(g.kernels[0].find_buffer("w1")->swizzle, 1);
  EXPECT_EQ(g.kernels[0].find_buffer("w1")->contiguous_dim, 1);
  EXPECT_EQ(g.kernels[0].find_buffer("aa")->swizzle, 0);  // not a matmul operand
  ProgramPlan c = lower_graph(full, target_by_name("cpu"), "select-layouts");
  EXPECT_EQ(c.kernels[0].find_buffer("w1")->swizzle, 0);
}

TEST(SelectLayouts, FindsTheExactMinimumOnASmallCase) {
  // Brute force over every layout of every shared buffer agrees with the pass (CPU target: the
  // H100's extra swizzle choice makes brute force 2^9 times slower).
  const Target& t = target_by_name("cpu");
  ProgramPlan base = lower_graph(load("rms_norm_linear.fused"), t, "fuse-threads");
  ProgramPlan best = select_layouts(base, t);
  KernelPlan k = base.kernels[0];
  std::vector<PlanBuffer*> shared;
  for (PlanBuffer& b : k.buffers)
    if (b.space == MemSpace::shared) shared.push_back(&b);
  int64_t min_cost = -1;
  std::function<void(size_t)> rec = [&](size_t i) {
    if (i == shared.size()) {
      int64_t c = layout_cost(k, t);
      if (min_cost < 0 || c < min_cost) min_cost = c;
      return;
    }
    for (int c = 0; c < static_cast<int>(shared[i]->shape.size()); ++c)
      for (int sw = 0; sw <= (t.kind == TargetKind::gpu ? 1 : 0); ++sw) {
        shared[i]->contiguous_dim = c;
        shared[i]->swizzle = sw;
        rec(i + 1);
      }
  };
  rec(0);
  EXPECT_EQ(layout_cost(best.kernels[0], t), min_cost);
}

TEST(SharedMemory, NoPlanOverlapsLiveBuffersAndPeaksAreReported) {
  int kernels = 0;
  for (const auto& [name, plan] : all_plans()) {
    if (name.find(".plan-") == std::string::npos) continue;
    for (const KernelPlan& k : plan.kernels) {
      if (k.library) continue;
      ++kernels;
      EXPECT_EQ(check_shared_memory(k), std::vector<std::string>{}) << name;
      EXPECT_GT(k.smem_bytes, 0) << name;
      // The peak is at least the largest set of buffers live at one level.
      auto live = shared_lifetimes(k);
      int64_t lower_bound = 0;
      for (int level = -1; level < 64; ++level) {
        int64_t sum = 0;
        for (const LiveBuffer& b : live)
          if (b.begin <= level && level <= b.end) sum += b.bytes;
        lower_bound = std::max(lower_bound, sum);
      }
      EXPECT_GE(k.smem_bytes, lower_bound) << name;
    }
    if (name.find(".plan-device-memory") != std::string::npos) {
      EXPECT_EQ(check_device_memory(plan), std::vector<std::string>{}) << name;
    }
  }
  EXPECT_GE(kernels, 8);
}

TEST(SharedMemory, TheCheckerCatchesOverlaps) {
  ProgramPlan p = lower_graph(load("gated_mlp.fused"), target_by_name("cpu"));
  KernelPlan k = p.kernels[0];
  ASSERT_TRUE(check_shared_memory(k).empty());
  // Moving the two weight tiles (both live during the loop) onto one another must be caught.
  k.find_buffer("w2")->offset = k.find_buffer("w1")->offset;
  EXPECT_FALSE(check_shared_memory(k).empty());
  k = p.kernels[0];
  k.smem_bytes /= 2;
  EXPECT_FALSE(check_shared_memory(k).empty());
}

TEST(SharedMemory, AllocatorReusesDeadBuffersAndKeepsTheSmallestPeak) {
  // a and b die before c and d start: c and d reuse their space.
  std::vector<LiveBuffer> bufs = {
      {"a", 256, 0, 1}, {"b", 128, 0, 2}, {"c", 256, 3, 4}, {"d", 128, 3, 3}, {"e", 64, 0, 4}};
  Allocation a = allocate_intervals(bufs, 64);
  EXPECT_TRUE(find_overlaps(a.buffers, a.peak).empty());
  EXPECT_EQ(a.peak, 256 + 128 + 64);
  EXPECT_FALSE(a.strategy.empty());
  // Random instances: never an overlap, never below the live-set lower bound.
  uint64_t state = 12345;
  auto rnd = [&](int n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % static_cast<uint64_t>(n));
  };
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<LiveBuffer> r;
    for (int i = 0, n = 1 + rnd(12); i < n; ++i) {
      int b = rnd(10);
      r.push_back({"t" + std::to_string(i), 16 * (1 + rnd(64)), b, b + rnd(5)});
    }
    Allocation x = allocate_intervals(r, 16);
    EXPECT_TRUE(find_overlaps(x.buffers, x.peak).empty());
    int64_t bound = 0;
    for (int level = 0; level < 16; ++level) {
      int64_t s = 0;
      for (const LiveBuffer& b : r)
        if (b.begin <= level && level <= b.end) s += b.bytes;
      bound = std::max(bound, s);
    }
    EXPECT_GE(x.peak, bound);
  }
}

TEST(DeviceMemory, TempTensorsShareTheWorkspace) {
  // rms_norm expands into sqr, mean, shift, sqrt, div: the temps die one after another.
  ProgramPlan p = lower_graph(load("rms_norm_linear"), target_by_name("cpu"));
  int64_t total = 0;
  for (const PlanBuffer& t : p.tensors)
    if (t.role == TensorRole::temp) {
      EXPECT_GE(t.offset, 0) << t.name;
      total += t.bytes();
    } else {
      EXPECT_EQ(t.offset, -1) << t.name;
    }
  EXPECT_LT(p.workspace_bytes, total);
  EXPECT_TRUE(check_device_memory(p).empty());
}

TEST(Pipeline, RejectsUnknownPassNames) {
  EXPECT_THROW(lower_graph(load("gated_mlp"), target_by_name("cpu"), "no-such-pass"), UserError);
  EXPECT_EQ(lowering_passes().size(), 10u);
}

// Pipeline depth: as many stages (up to kMaxStages, at most the loop count) as the target's
// shared memory holds; a smaller limit gives fewer; CPU plans keep 1.
TEST(ChooseStages, FitsTheTargetLimitAndKeepsCpuAtOne) {
  Graph g = load("gated_mlp.fused");
  EXPECT_EQ(lower_graph(g, target_by_name("cpu")).kernels[0].stages, 1);
  Target t = target_by_name("h100");
  ProgramPlan roomy = lower_graph(g, t);
  ASSERT_EQ(roomy.kernels.size(), 1u);
  const KernelPlan& k = roomy.kernels[0];
  EXPECT_EQ(k.stages, std::min(kMaxStages, k.loop));
  EXPECT_LE(k.smem_bytes, t.smem_per_block_bytes);
  // Every slot of a pipelined buffer lies inside the planned peak.
  const PlanBuffer* w1 = k.find_buffer("w1");
  ASSERT_TRUE(is_pipelined(k, "w1"));
  EXPECT_LE(w1->offset + k.stages * stage_stride(*w1), k.smem_bytes);
  // Two stages' worth of memory: at most two stages.
  KernelPlan single = lower_graph(g, t, "schedule").kernels[0];
  int64_t one = allocate_intervals(shared_lifetimes(single), 128).peak;
  single.stages = 2;
  int64_t two = allocate_intervals(shared_lifetimes(single), 128).peak;
  ASSERT_GT(two, one);
  t.smem_per_block_bytes = two;
  EXPECT_EQ(lower_graph(g, t).kernels[0].stages, 2);
  t.smem_per_block_bytes = two - 1;
  EXPECT_EQ(lower_graph(g, t).kernels[0].stages, 1);
}

// The plan without accumulator fusion: every pass but fuse-accumulators, in pipeline order.
ProgramPlan lower_without_fusion(const Graph& g, const Target& t) {
  ProgramPlan p = lower_graph(g, t, "select-layouts");
  return plan_shared_memory(choose_stages(hoist_invariant_loads(schedule_by_depth(p)), t), t);
}

// On the full-size fused examples (all tensor-core matmuls feeding accum_sum), the fused products
// get no shared memory, the accumulators live in registers through the loop, the peak drops and
// the pipeline is at least as deep. Prints the before/after figures docs/cuda-backend.md quotes.
TEST(FuseAccumulators, RegisterFusedBuffersLeaveSharedMemoryOnTheFusedExamples) {
  const Target& t = target_by_name("h100");
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(test::source_path("examples"))) {
    std::string f = e.path().filename().string();
    if (f.size() > 11 && f.substr(f.size() - 11) == ".fused.weft")
      files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 3u);
  int fused_kernels = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    Graph g = test::load_graph_file(f);
    ProgramPlan before = lower_without_fusion(g, t), after = lower_graph(g, t);
    ASSERT_EQ(before.kernels.size(), after.kernels.size());
    for (size_t i = 0; i < after.kernels.size(); ++i) {
      const KernelPlan &b = before.kernels[i], &a = after.kernels[i];
      if (a.library) continue;
      auto fusions = accumulator_fusions(a);
      // The analysis sees the same fusions before and after: the pass only marks them.
      EXPECT_EQ(fusions, accumulator_fusions(b));
      if (fusions.empty()) continue;
      ++fused_kernels;
      for (const AccumulatorFusion& fu : fusions) {
        EXPECT_TRUE(fu.registers) << fu.product << ": every example matmul fits tensor cores";
        EXPECT_EQ(b.find_buffer(fu.product)->space, MemSpace::shared);
        EXPECT_EQ(a.find_buffer(fu.product)->space, MemSpace::reg) << fu.product;
        EXPECT_EQ(a.find_buffer(fu.product)->offset, -1) << fu.product;
        EXPECT_EQ(a.find_buffer(fu.accumulator)->space, MemSpace::shared) << fu.accumulator;
      }
      EXPECT_LT(a.smem_bytes, b.smem_bytes) << a.name;
      EXPECT_GE(a.stages, b.stages) << a.name;
      EXPECT_TRUE(check_shared_memory(a).empty());
      fmt::print("{} {}: smem {} -> {} bytes, stages {} -> {}\n",
                 std::filesystem::path(f).filename().string(), a.name, b.smem_bytes, a.smem_bytes,
                 b.stages, a.stages);
    }
  }
  EXPECT_GE(fused_kernels, 3);
}

// A register accumulator's shared buffer is live only in the post stage, where the emitter writes
// the fragments; the products are gone from the lifetimes altogether.
TEST(FuseAccumulators, RegisterAccumulatorsAreLiveOnlyAfterTheLoop) {
  KernelPlan k = lower_graph(load("gated_mlp.fused"), target_by_name("h100")).kernels.at(0);
  int loop_levels = 0;
  for (const Step& s : k.loop_steps) loop_levels = std::max(loop_levels, s.depth + 1);
  int marked = 0;
  for (const Step& s : k.loop_steps) marked += s.in_registers;
  EXPECT_EQ(marked, 2);
  std::map<std::string, LiveBuffer> live;
  for (const LiveBuffer& b : shared_lifetimes(k)) live[b.name] = b;
  EXPECT_EQ(live.count("a"), 0u);
  EXPECT_EQ(live.count("b"), 0u);
  for (const char* acc : {"aa", "ba"}) {
    ASSERT_EQ(live.count(acc), 1u) << acc;
    EXPECT_EQ(live[acc].begin, loop_levels) << acc;
  }
  // So an accumulator may reuse a loaded tile's memory; the checker still proves the plan.
  EXPECT_TRUE(check_shared_memory(k).empty());
  // Dropping the mark makes the accumulator live through the loop again.
  for (Step& s : k.loop_steps) s.in_registers = false;
  live.clear();
  for (const LiveBuffer& b : shared_lifetimes(k)) live[b.name] = b;
  EXPECT_EQ(live.at("aa").begin, -1);
}

// f32 matmuls have no tensor-core path: the product is still fused (the emitter adds into the
// shared accumulator) but the accumulator stays in shared memory. The CPU fuses the same matmuls
// (its plans are f32, so never in registers): the products leave the arena.
TEST(FuseAccumulators, ScalarMatmulsFuseIntoSharedAccumulatorsOnGpuAndCpu) {
  Graph g = test::load_graph_file(test::source_path("tests/data/cuda/attention_f32.fused.weft"));
  KernelPlan k = lower_graph(g, target_by_name("h100")).kernels.at(0);
  EXPECT_EQ(k.find_buffer("o")->space, MemSpace::reg);
  EXPECT_EQ(k.find_buffer("s")->space, MemSpace::shared);  // read by exp, not an accumulator
  EXPECT_EQ(k.find_buffer("oa")->space, MemSpace::shared);
  for (const Step& s : k.loop_steps) EXPECT_FALSE(s.in_registers);
  const Target& cpu = target_by_name("cpu");
  int fused = 0;
  for (const std::string& p : kPrograms) {
    SCOPED_TRACE(p);
    Graph pg = load(p);
    ProgramPlan before = lower_graph(pg, cpu, "select-layouts");
    ProgramPlan after = lower_graph(pg, cpu, "fuse-accumulators");
    ASSERT_EQ(before.kernels.size(), after.kernels.size());
    for (size_t i = 0; i < after.kernels.size(); ++i) {
      auto fusions = accumulator_fusions(after.kernels[i]);
      EXPECT_EQ(fusions, accumulator_fusions(before.kernels[i]));
      EXPECT_EQ(fusions, planned_accumulator_fusions(after.kernels[i]));
      for (const AccumulatorFusion& f : fusions) {
        EXPECT_FALSE(f.registers) << f.product;
        EXPECT_EQ(before.kernels[i].find_buffer(f.product)->space, MemSpace::shared);
        EXPECT_EQ(after.kernels[i].find_buffer(f.product)->space, MemSpace::reg);
        ++fused;
      }
    }
    // Nothing else changes.
    for (size_t i = 0; i < after.kernels.size(); ++i)
      for (PlanBuffer& b : after.kernels[i].buffers)
        if (b.space == MemSpace::reg && before.kernels[i].find_buffer(b.name)->space != b.space)
          b = *before.kernels[i].find_buffer(b.name);
    EXPECT_TRUE(after == before);
  }
  EXPECT_GE(fused, 4);  // gated_mlp's two, rms_norm_linear's and attention's P.V
}

// The emitters read the fusions from the plan and refuse marks that disagree with the analysis.
TEST(FuseAccumulators, PlannedFusionsAreCheckedAgainstTheAnalysis) {
  KernelPlan k = lower_graph(load("gated_mlp.fused"), target_by_name("cpu")).kernels.at(0);
  ASSERT_EQ(planned_accumulator_fusions(k).size(), 2u);
  KernelPlan unfused = k;
  unfused.find_buffer("a")->space = MemSpace::shared;
  EXPECT_THROW(planned_accumulator_fusions(unfused), InternalError);
  EXPECT_THROW(
      emit_cpu_source(lower_graph(load("gated_mlp.fused"), target_by_name("cpu"), "build")),
      InternalError);
  KernelPlan marked = k;
  for (Step& s : marked.loop_steps)
    if (s.kind == StepKind::accum) s.in_registers = true;
  EXPECT_THROW(planned_accumulator_fusions(marked), InternalError);
}

// CPU blocking: the register tile of every block matmul and the blocks per task are plan fields
// with the values the CPU emitter used to pick itself; GPU plans keep none.
TEST(ChooseCpuBlocking, TilesDivideTheResultAndGroupsDivideTheGrid) {
  EXPECT_EQ(cpu_register_tile(16, 6144), (std::array<int64_t, 2>{8, 32}));
  EXPECT_EQ(cpu_register_tile(4, 32), (std::array<int64_t, 2>{4, 32}));
  EXPECT_EQ(cpu_register_tile(6, 24), (std::array<int64_t, 2>{2, 24}));
  EXPECT_EQ(cpu_register_tile(3, 40), (std::array<int64_t, 2>{1, 20}));
  EXPECT_EQ(cpu_block_group(64, 1024), 8);
  EXPECT_EQ(cpu_block_group(16, 1024), 4);  // at least kMinTasks tasks
  EXPECT_EQ(cpu_block_group(12, 1024), 2);  // a divisor of the block count
  EXPECT_EQ(cpu_block_group(7, 1024), 1);
  EXPECT_EQ(cpu_block_group(64, 1 << 20), 4);  // the group's arenas within 4 MiB
  int tiled = 0;
  for (const std::string& p : kPrograms) {
    SCOPED_TRACE(p);
    Graph g = load(p);
    for (const char* t : {"cpu", "h100"}) {
      bool cpu = std::string(t) == "cpu";
      ProgramPlan plan = lower_graph(g, target_by_name(t));
      for (const KernelPlan& k : plan.kernels) {
        if (k.library) continue;
        EXPECT_EQ(k.block_group, cpu ? cpu_block_group(k.num_blocks(), k.smem_bytes) : 1);
        EXPECT_EQ(k.num_blocks() % k.block_group, 0);
        for (const auto* steps : {&k.loop_steps, &k.post_steps})
          for (const Step& s : *steps) {
            if (s.kind != StepKind::compute || s.op != OpKind::matmul) {
              EXPECT_EQ(s.register_tile, (std::array<int64_t, 2>{0, 0}));
              continue;
            }
            const Shape& c = k.find_buffer(s.outputs[0])->shape;
            auto want =
                cpu ? cpu_register_tile(c[c.size() - 2], c.back()) : std::array<int64_t, 2>{0, 0};
            EXPECT_EQ(s.register_tile, want) << s.outputs[0];
            tiled += cpu;
          }
      }
    }
  }
  EXPECT_GE(tiled, 4);
}

// The CPU emitter takes the tile and the group from the plan: changing them changes the code.
TEST(ChooseCpuBlocking, TheCpuEmitterFollowsThePlan) {
  ProgramPlan plan = lower_graph(load("gqa_attention.fused"), target_by_name("cpu"));
  KernelPlan& k = plan.kernels.at(0);
  std::string base = emit_cpu_source(plan);
  ASSERT_GT(k.num_blocks(), 1);
  ProgramPlan grouped = plan;
  grouped.kernels[0].block_group = k.num_blocks();
  std::string g = emit_cpu_source(grouped);
  EXPECT_NE(g.find(fmt::format("weft_pfor(rt, 1, ")), std::string::npos) << g;
  ProgramPlan retiled = plan;
  for (Step& s : retiled.kernels[0].loop_steps)
    if (s.op == OpKind::matmul && s.kind == StepKind::compute) s.register_tile = {1, 1};
  EXPECT_NE(emit_cpu_source(retiled), base);
  for (Step& s : retiled.kernels[0].loop_steps)
    if (s.op == OpKind::matmul && s.kind == StepKind::compute) s.register_tile = {0, 0};
  EXPECT_THROW(emit_cpu_source(retiled), InternalError);
}

// The text form carries the register mark and rejects it where it means nothing.
TEST(PlanText, RegisterAccumulatorMarkRoundTrips) {
  ProgramPlan p = lower_graph(load("gated_mlp.fused"), target_by_name("h100"));
  std::string text = print_plan(p);
  EXPECT_NE(text.find("accum accum_sum aa = a @2 registers\n"), std::string::npos) << text;
  EXPECT_TRUE(parse_plan(text) == p);
  std::string bad = text;
  bad.replace(bad.find("store O = y @1"), 14, "store O = y @1 registers");
  EXPECT_THROW(parse_plan(bad), UserError);
}

// The plan without hoisting: every pass but hoist-loads, in pipeline order.
ProgramPlan lower_without_hoisting(const Graph& g, const Target& t) {
  ProgramPlan p = lower_graph(g, t, "schedule");
  return plan_device_memory(plan_shared_memory(choose_stages(p, t), t));
}

const Step& load_step(const KernelPlan& k, const std::string& buffer) {
  for (const Step& s : k.loop_steps)
    if (s.kind == StepKind::load && s.outputs.at(0) == buffer) return s;
  ADD_FAILURE() << "no load of " << buffer;
  static const Step none;
  return none;
}

// The full-size attention example's query tile does not move with the KV loop: it is one buffer
// (not one per pipeline stage), live from before the loop through all of it, loaded by code
// before the loop and never inside it, and the shared-memory peak drops by at least the three
// slots it no longer takes.
TEST(HoistLoads, GqaQueryTileIsOneBufferLoadedBeforeTheLoop) {
  Graph g = test::load_graph_file(test::source_path("examples/gqa_attention.fused.weft"));
  const Target& t = target_by_name("h100");
  KernelPlan before = lower_without_hoisting(g, t).kernels.at(0);
  ProgramPlan plan = lower_graph(g, t);
  const KernelPlan& k = plan.kernels.at(0);
  ASSERT_GT(k.loop, 1);
  EXPECT_TRUE(load_step(k, "q").hoisted);
  EXPECT_FALSE(load_step(k, "k").hoisted);
  EXPECT_FALSE(load_step(k, "v").hoisted);
  EXPECT_FALSE(is_pipelined(k, "q"));
  EXPECT_TRUE(is_pipelined(k, "k"));
  EXPECT_TRUE(is_pipelined(before, "q"));
  const PlanBuffer& q = *k.find_buffer("q");
  EXPECT_EQ(footprint_bytes(k, q), q.bytes());
  EXPECT_EQ(k.stages, before.stages);
  EXPECT_LE(k.smem_bytes + (before.stages - 1) * stage_stride(q), before.smem_bytes);
  EXPECT_TRUE(check_shared_memory(k).empty());
  int loop_levels = 0;
  for (const Step& s : k.loop_steps) loop_levels = std::max(loop_levels, s.depth + 1);
  for (const LiveBuffer& b : shared_lifetimes(k))
    if (b.name == "q") {
      EXPECT_EQ(b.begin, -1);
      EXPECT_GE(b.end, loop_levels - 1);
    }
  // Generated code: one load of q, ahead of the loop (and of the pipeline's prologue on the GPU).
  std::string cu = emit_cuda_source(plan);
  size_t at = cu.find("// load q <- Q");
  EXPECT_NE(at, std::string::npos);
  EXPECT_EQ(cu.find("// load q <- Q", at + 1), std::string::npos);
  EXPECT_LT(at, cu.find("for (int f = 0;"));
  EXPECT_NE(cu.find("for (int f = 0;"), std::string::npos);
  ProgramPlan cpu = lower_graph(g, target_by_name("cpu"));
  EXPECT_TRUE(load_step(cpu.kernels.at(0), "q").hoisted);
  std::string cc = emit_cpu_source(cpu);
  size_t qload = cc.find("// load q <- Q");
  EXPECT_NE(qload, std::string::npos);
  EXPECT_EQ(cc.find("// load q <- Q", qload + 1), std::string::npos);
  EXPECT_LT(qload, cc.find("for (int64_t it = 0;"));
}

// Hoisting marks exactly the loads without an fmap of kernels that loop, on every target; on the
// GPU the pipeline is no shallower and, at the same depth, the peak no higher. Prints the
// before/after figures docs/cuda-backend.md quotes for the fused examples.
TEST(HoistLoads, MarksInvariantLoadsOnlyAndFreesPipelineSlots) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(test::source_path("examples")))
    if (e.path().extension() == ".weft") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  int hoisted = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    Graph g = test::load_graph_file(f);
    for (const char* tn : {"h100", "a100", "cpu"}) {
      const Target& t = target_by_name(tn);
      ProgramPlan before = lower_without_hoisting(g, t), after = lower_graph(g, t);
      ASSERT_EQ(before.kernels.size(), after.kernels.size());
      for (size_t i = 0; i < after.kernels.size(); ++i) {
        const KernelPlan &b = before.kernels[i], &a = after.kernels[i];
        if (a.library) continue;
        int marked = 0;
        for (const Step& s : a.loop_steps) {
          bool invariant = s.kind == StepKind::load && s.attrs.get_int_or("fmap", -1) < 0;
          EXPECT_EQ(s.hoisted, invariant && a.loop > 1) << s.outputs.at(0);
          marked += s.hoisted;
        }
        hoisted += marked;
        EXPECT_TRUE(check_shared_memory(a).empty());
        if (t.kind == TargetKind::gpu) {
          EXPECT_GE(a.stages, b.stages) << a.name;
          // A pipelined hoisted tile would take `stages` slots; now it takes one.
          if (a.stages == b.stages && a.stages > 1) {
            EXPECT_LE(a.smem_bytes, b.smem_bytes) << a.name;
          }
        }
        if (marked > 0 && std::string(tn) != "cpu")
          fmt::print("{} {} {}: smem {} -> {} bytes, stages {} -> {}\n",
                     std::filesystem::path(f).filename().string(), tn, a.name, b.smem_bytes,
                     a.smem_bytes, b.stages, a.stages);
      }
    }
  }
  EXPECT_GE(hoisted, 3);  // gqa_attention.fused's q on each target
}

// The text form carries the hoisted mark and rejects it where it means nothing.
TEST(PlanText, HoistedLoadMarkRoundTrips) {
  ProgramPlan p = lower_graph(load("gqa_attention.fused"), target_by_name("h100"));
  std::string text = print_plan(p);
  const std::string mark = "load q = Q @0 fmap=-1 imap=[0,-1,-1] hoisted\n";
  EXPECT_NE(text.find(mark), std::string::npos) << text;
  EXPECT_TRUE(parse_plan(text) == p);
  auto replaced = [&](const std::string& from, const std::string& to) {
    return replace_once(text, from, to);
  };
  // On a load whose tile moves with the iteration, on another step, or not last: errors.
  EXPECT_THROW(parse_plan(replaced("fmap=2 imap=[0,2,-1]", "fmap=2 imap=[0,2,-1] hoisted")),
               UserError);
  EXPECT_THROW(parse_plan(replaced("store OP = oa @0", "store OP = oa @0 hoisted")), UserError);
  EXPECT_THROW(
      parse_plan(replaced("fmap=-1 imap=[0,-1,-1] hoisted", "hoisted fmap=-1 imap=[0,-1,-1]")),
      UserError);
  // Unmarked, the same load is pipelined again and its buffer takes every slot.
  KernelPlan k = p.kernels.at(0);
  ASSERT_GT(k.stages, 1);
  EXPECT_FALSE(is_pipelined(k, "q"));
  for (Step& s : k.loop_steps) s.hoisted = false;
  EXPECT_TRUE(is_pipelined(k, "q"));
}

// The CPU blocking fields are in the text, round-trip, and are refused where they mean nothing.
TEST(PlanText, CpuBlockingFieldsRoundTrip) {
  ProgramPlan p = lower_graph(load("gqa_attention.fused"), target_by_name("cpu"));
  std::string text = print_plan(p);
  EXPECT_NE(text.find("smem=2432 group=2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("compute matmul o = e,v @3 tile=[8,16]\n"), std::string::npos) << text;
  EXPECT_TRUE(parse_plan(text) == p);
  auto replaced = [&](const std::string& from, const std::string& to) {
    return replace_once(text, from, to);
  };
  EXPECT_THROW(parse_plan(replaced("group=2", "group=3")), UserError);  // 8 blocks
  EXPECT_THROW(parse_plan(replaced("group=2", "group=0")), UserError);
  EXPECT_THROW(parse_plan(replaced(" group=2", "")), UserError);
  EXPECT_THROW(parse_plan(replaced("tile=[8,16]", "tile=[8]")), UserError);
  EXPECT_THROW(parse_plan(replaced("tile=[8,16]", "tile=[0,16]")), UserError);
  EXPECT_THROW(parse_plan(replaced("compute sum d = e @3 dim=2 to=1",
                                   "compute sum d = e @3 dim=2 to=1 tile=[1,1]")),
               UserError);
}

}  // namespace
}  // namespace weft
