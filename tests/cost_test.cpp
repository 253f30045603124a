// Tests of the cost model: the examples' fused µGraphs beat their input programs and sit near the
// roofline floor, and predictions move the obvious way when shapes, grids and loops change.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/target.h"
#include "cost/block_cost.h"
#include "cost/cost_json.h"
#include "cost/cost_model.h"
#include "ir/parser.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit");

namespace weft {
namespace {

const Target& h100() {
  return target_by_name("h100");
}

Graph load_example(const std::string& name) {
  return test::load_graph_file(test::example_path(name));
}

// matmul(X, W) for X [m, k], W [k, n] as one graph-defined kernel: the grid cuts W's columns,
// the loop walks the contraction, X is replicated across blocks (like the fused RMSNorm+Linear
// without the norm).
Graph matmul_kernel(int64_t m, int64_t k, int64_t n, int64_t grid, int64_t loop,
                    DType dt = DType::f16) {
  GraphBuilder b(Level::block);
  b.set_block_params({grid, 1, 1}, 128, loop);
  ValueId X = b.add_input("X", {dt, {m, k}});
  ValueId W = b.add_input("W", {dt, {k, n}});
  ValueId x = b.add(OpKind::iter, {X}, {{"fmap", int64_t{1}}});
  ValueId w = b.add(OpKind::iter, {W}, {{"imap", std::vector<int64_t>{1}}, {"fmap", int64_t{0}}});
  ValueId p = b.add(OpKind::matmul, {x, w});
  ValueId a = b.add(OpKind::accum_sum, {p});
  b.add(OpKind::save, {a}, {{"omap", std::vector<int64_t>{1}}}, "O", {}, Stage::post);
  GraphBuilder g(Level::kernel, "mm");
  ValueId KX = g.add_input("X", {dt, {m, k}});
  ValueId KW = g.add_input("W", {dt, {k, n}});
  auto out = g.add_nested(OpKind::kernel, {KX, KW}, std::move(b).finish());
  g.add_output(out[0]);
  return std::move(g).finish();
}

// The same matmul as one pre-defined (library) operator.
Graph matmul_program(int64_t m, int64_t k, int64_t n, DType dt = DType::f16) {
  GraphBuilder g(Level::kernel, "mm");
  ValueId X = g.add_input("X", {dt, {m, k}});
  ValueId W = g.add_input("W", {dt, {k, n}});
  g.add_output(g.add(OpKind::matmul, {X, W}));
  return std::move(g).finish();
}

double us(double s) {
  return s * 1e6;
}

TEST(CostModel, RmsNormLinearFusedBeatsUnfusedAndNearsTheFloor) {
  Graph fused = load_example("rms_norm_linear.fused.weft");
  Graph unfused = load_example("rms_norm_linear.weft");
  Roofline floor = roofline(unfused, h100());
  // 16x4096 + 4096x6144 inputs and the 16x6144 output, f16, at 3 TB/s.
  EXPECT_NEAR(floor.bytes, 2.0 * (16 * 4096 + 4096 * 6144 + 16 * 6144), 1.0);
  EXPECT_GT(floor.bytes, 50.3e6);
  EXPECT_NEAR(us(floor.floor_s), 16.9, 0.2);
  EXPECT_EQ(floor.floor_s, floor.memory_s);
  double f = predict(fused, h100()).total_s;
  double u = predict(unfused, h100()).total_s;
  EXPECT_LT(f, u);
  EXPECT_GE(f / floor.floor_s, 1.1);
  EXPECT_LE(f / floor.floor_s, 1.6);
  EXPECT_EQ(roofline_floor(fused, h100()), floor.floor_s);  // same inputs, outputs and matmul
}

TEST(CostModel, GatedMlpFusedBeatsUnfusedAndNearsTheFloor) {
  Graph fused = load_example("gated_mlp.fused.weft");
  Graph unfused = load_example("gated_mlp.weft");
  double fl = roofline_floor(unfused, h100());
  EXPECT_NEAR(us(fl), 2.0 * (8 * 4096 + 2 * 4096 * 4096 + 8 * 4096) / 3.0e12 * 1e6, 0.01);
  CostReport f = predict(fused, h100());
  CostReport u = predict(unfused, h100());
  EXPECT_EQ(f.kernel_launches(), 1);
  EXPECT_EQ(u.kernel_launches(), 4);
  EXPECT_LT(f.total_s, u.total_s);
  EXPECT_GE(f.total_s / fl, 1.1);
  EXPECT_LE(f.total_s / fl, 1.6);
}

TEST(CostModel, GqaAttentionFusedBeatsUnfused) {
  CostReport f = predict(load_example("gqa_attention.fused.weft"), h100());
  CostReport u = predict(load_example("gqa_attention.weft"), h100());
  EXPECT_LT(f.total_s, u.total_s);
  // The reshapes are views: listed, but no launch and no time.
  int views = 0;
  for (const KernelCost& k : f.kernels)
    if (!k.launched) {
      ++views;
      EXPECT_EQ(k.op, "reshape");
      EXPECT_EQ(k.time_s, 0.0);
    }
  EXPECT_EQ(views, 2);
  EXPECT_EQ(f.kernel_launches(), 4);
  // Q's tile is loop-invariant (no fmap): loaded once per block, not once per iteration; K and V
  // tiles are loaded every iteration.
  const KernelCost& k = f.kernels[0];
  ASSERT_TRUE(k.graph_defined);
  const Graph fused = load_example("gqa_attention.fused.weft");
  const Graph& body = *fused.ops[0].body;
  ASSERT_GT(body.loop, 1);
  double expected = 0;
  int invariant = 0;
  for (const Op& op : body.ops) {
    if (op.kind != OpKind::iter) continue;
    bool per_iteration = op.attrs.get_int("fmap") >= 0;
    invariant += per_iteration ? 0 : 1;
    double tile = 2.0 * static_cast<double>(numel(body.type(op.outputs[0]).shape));
    expected += static_cast<double>(body.num_blocks()) * tile * (per_iteration ? body.loop : 1);
  }
  EXPECT_EQ(invariant, 1);
  EXPECT_DOUBLE_EQ(k.requested_bytes, expected);
}

// A thread graph keeps the intermediates of an elementwise chain in registers: the same
// post-loop SiLU and product as two block operators move more shared-memory bytes and are never
// faster.
TEST(CostModel, ThreadGraphsSaveSharedMemoryTraffic) {
  std::string path = weft::test::source_dir() + "/examples/gated_mlp.fused.weft";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string thread_block =
      "  y = thread(aa, ba) {\n    s = silu(aa)\n    p = mul(s, ba)\n    output p\n  }\n";
  size_t at = text.find(thread_block);
  ASSERT_NE(at, std::string::npos) << "the example changed; update this test";
  std::string unfused = text;
  unfused.replace(at, thread_block.size(), "  s = silu(aa)\n  y = mul(s, ba)\n");
  KernelCost with_thread = predict(parse_graph(text, path), h100()).kernels[0];
  KernelCost without = predict(parse_graph(unfused, path), h100()).kernels[0];
  EXPECT_DOUBLE_EQ(with_thread.cuda_flops, without.cuda_flops);
  EXPECT_DOUBLE_EQ(without.smem_bytes - with_thread.smem_bytes, 64 * 2.0 * (8 * 64 * 2));
  EXPECT_GE(without.time_s, with_thread.time_s);
}

TEST(CostModel, FusedRmsNormLinearBreakdown) {
  CostReport r = predict(load_example("rms_norm_linear.fused.weft"), h100());
  ASSERT_EQ(r.kernels.size(), 1u);
  const KernelCost& k = r.kernels[0];
  EXPECT_TRUE(k.graph_defined);
  EXPECT_EQ(k.blocks, 96);
  EXPECT_EQ(k.loop, 16);
  EXPECT_EQ(k.waves, 1);
  EXPECT_GE(k.blocks_per_sm, 1);
  // X (128 KiB) is replicated: every block reads all of it; W is read once in total.
  const double x = 16 * 4096 * 2, w = 4096.0 * 6144 * 2, out = 16 * 6144 * 2;
  EXPECT_DOUBLE_EQ(k.requested_bytes, 96 * x + w);
  EXPECT_DOUBLE_EQ(k.l2_hit_bytes, 95 * x);  // fits in L2: only the first read goes to DRAM
  EXPECT_DOUBLE_EQ(k.dram_bytes, x + w + out);
  EXPECT_DOUBLE_EQ(k.store_bytes, out);
  EXPECT_GE(k.tensor_flops, 2.0 * 16 * 4096 * 6144);
  EXPECT_GT(k.cuda_flops, 0);  // the sum of squares and the division
  EXPECT_GT(k.smem_bytes, 96 * x + w);
  EXPECT_EQ(k.bound, Bound::memory);
  EXPECT_DOUBLE_EQ(r.total_s, k.time_s);
  EXPECT_GE(k.time_s, k.launch_s + k.memory_s * 0.99 - 2 * h100().dram_latency_s);
}

TEST(CostModel, MoreColumnsIsNeverFaster) {
  const Target& t = h100();
  // Library matmul.
  EXPECT_GT(predict(matmul_program(16, 4096, 12288), t).total_s,
            predict(matmul_program(16, 4096, 6144), t).total_s);
  // Graph-defined: same grid (wider tiles) and same tile (twice the blocks).
  double base = predict(matmul_kernel(16, 4096, 6144, 96, 16), t).total_s;
  EXPECT_GT(predict(matmul_kernel(16, 4096, 12288, 96, 16), t).total_s, base);
  EXPECT_GT(predict(matmul_kernel(16, 4096, 12288, 192, 16), t).total_s, base);
  // More rows or a longer contraction is not faster either.
  EXPECT_GE(predict(matmul_kernel(64, 4096, 6144, 96, 16), t).total_s, base);
  EXPECT_GT(predict(matmul_kernel(16, 8192, 6144, 96, 16), t).total_s, base);
}

TEST(CostModel, IdleSmsAreSlowerThanAFullGrid) {
  const Target& t = h100();
  CostReport few = predict(matmul_kernel(16, 4096, 6144, 8, 64), t);
  CostReport full = predict(matmul_kernel(16, 4096, 6144, 96, 16), t);
  EXPECT_EQ(few.kernels[0].waves, 1);
  EXPECT_GT(few.total_s, 2.0 * full.total_s);
  // Same data, same loop: 24 blocks are slower than 96.
  EXPECT_GT(predict(matmul_kernel(16, 4096, 6144, 24, 16), t).total_s,
            predict(matmul_kernel(16, 4096, 6144, 96, 16), t).total_s);
}

TEST(CostModel, WavesFollowOccupancy) {
  const Target& t = h100();
  // 3072 blocks of small tiles: several waves.
  Graph g = matmul_kernel(16, 4096, 6144, 3072, 16);
  const KernelCost k = predict(g, t).kernels[0];
  int64_t smem = block_smem_estimate(*g.ops[0].body);
  EXPECT_EQ(k.smem_per_block, smem);
  int64_t bps = std::min<int64_t>(
      {t.smem_per_sm_bytes / smem, t.max_threads_per_sm / 128, t.max_blocks_per_sm});
  ASSERT_GE(bps, 1);
  EXPECT_EQ(k.blocks_per_sm, bps);
  EXPECT_EQ(k.waves, (3072 + t.sm_count * bps - 1) / (t.sm_count * bps));
  EXPECT_GT(k.waves, 1);
}

TEST(CostModel, LoopOverlapsLoadsWithComputeOnlyWhenLoopIsAboveOne) {
  const Target& t = h100();
  KernelCost one = predict(matmul_kernel(64, 1024, 6144, 96, 1), t).kernels[0];
  KernelCost four = predict(matmul_kernel(64, 1024, 6144, 96, 4), t).kernels[0];
  ASSERT_GT(one.compute_s, 0);
  ASSERT_GT(one.memory_s, 0);
  ASSERT_EQ(one.blocks_per_sm, 1);  // no other block on the SM to hide the load either
  // loop == 1: load, then compute (no overlap).
  EXPECT_NEAR(one.time_s - one.launch_s, one.memory_s + one.compute_s, 1e-12);
  // loop > 1: the parts overlap, so the time is below their sum, and the loop is faster.
  EXPECT_LT(four.time_s - four.launch_s, four.memory_s + four.compute_s);
  EXPECT_LT(four.time_s, one.time_s);
}

TEST(CostModel, ReplicatedLoadsMissWhenL2IsTooSmall) {
  Target t = h100();
  Graph g = matmul_kernel(16, 4096, 6144, 96, 16);
  KernelCost cached = predict(g, t).kernels[0];
  t.l2_bytes = 0;
  KernelCost uncached = predict(g, t).kernels[0];
  EXPECT_GT(cached.l2_hit_bytes, 0);
  EXPECT_EQ(uncached.l2_hit_bytes, 0);
  EXPECT_DOUBLE_EQ(uncached.requested_bytes, cached.requested_bytes);
  EXPECT_DOUBLE_EQ(uncached.dram_bytes, uncached.requested_bytes + uncached.store_bytes);
  EXPECT_GT(uncached.time_s, cached.time_s);
}

TEST(CostModel, TensorCoresForHalfCudaCoresForFloat) {
  const Target& t = h100();
  KernelCost h = predict(matmul_kernel(16, 4096, 6144, 96, 16, DType::f16), t).kernels[0];
  KernelCost f = predict(matmul_kernel(16, 4096, 6144, 96, 16, DType::f32), t).kernels[0];
  EXPECT_GT(h.tensor_flops, 0);
  EXPECT_EQ(f.tensor_flops, 0);
  EXPECT_GE(f.cuda_flops, 2.0 * 16 * 4096 * 6144);
  EXPECT_GT(f.compute_s, h.compute_s);
  KernelCost lib = predict(matmul_program(16, 4096, 6144, DType::f32), t).kernels[0];
  EXPECT_EQ(lib.tensor_flops, 0);
  EXPECT_DOUBLE_EQ(lib.cuda_flops, 2.0 * 16 * 4096 * 6144);
}

TEST(CostModel, EveryPredefinedOpIsALaunchThroughDeviceMemory) {
  const Target& t = h100();
  CostReport r = predict(load_example("gated_mlp.weft"), t);
  ASSERT_EQ(r.kernels.size(), 4u);
  double sum = 0;
  for (const KernelCost& k : r.kernels) {
    EXPECT_FALSE(k.graph_defined);
    EXPECT_GE(k.time_s, t.launch_overhead_s + t.dram_latency_s);
    sum += k.time_s;
  }
  EXPECT_DOUBLE_EQ(r.total_s, sum);
  // silu(A) reads A (8x4096 f16) and writes S: launch-bound, not bandwidth-bound.
  EXPECT_EQ(r.kernels[2].op, "silu");
  EXPECT_DOUBLE_EQ(r.kernels[2].dram_bytes, 2.0 * 8 * 4096 * 2);
  EXPECT_EQ(r.kernels[2].bound, Bound::launch);
  EXPECT_EQ(r.kernels[0].bound, Bound::memory);
}

TEST(CostModel, DeterministicAndFiniteOnEveryTarget) {
  for (const Target& t : all_targets()) {
    for (const char* name : {"rms_norm_linear.fused.weft", "gated_mlp.fused.weft",
                             "gqa_attention.fused.weft", "gqa_attention.weft"}) {
      Graph g = load_example(name);
      CostReport a = predict(g, t), b = predict(g, t);
      ASSERT_EQ(a.kernels.size(), b.kernels.size());
      EXPECT_EQ(a.total_s, b.total_s) << name << " on " << t.name;
      EXPECT_GT(a.total_s, 0) << name << " on " << t.name;
      EXPECT_TRUE(std::isfinite(a.total_s)) << name << " on " << t.name;
      EXPECT_GT(roofline_floor(g, t), 0) << name << " on " << t.name;
      EXPECT_GE(a.total_s, roofline_floor(g, t)) << name << " on " << t.name;
    }
  }
}

TEST(CostModel, RejectsNonKernelGraphs) {
  Graph g = matmul_kernel(16, 256, 256, 4, 4);
  EXPECT_THROW(predict(*g.ops[0].body, h100()), UserError);
  EXPECT_THROW(roofline(*g.ops[0].body, h100()), UserError);
}

TEST(CostModel, JsonCarriesTheReport) {
  Graph g = load_example("gated_mlp.weft");
  CostReport r = predict(g, h100());
  nlohmann::ordered_json j = cost_report_json(r);
  EXPECT_EQ(j["target"], "h100");
  EXPECT_EQ(j["launches"], 4);
  ASSERT_EQ(j["kernels"].size(), 4u);
  EXPECT_EQ(j["kernels"][0]["op"], "matmul");
  EXPECT_EQ(j["kernels"][0]["bound"], "memory");
  EXPECT_DOUBLE_EQ(j["total_us"].get<double>(), r.total_s * 1e6);
  EXPECT_DOUBLE_EQ(roofline_json(roofline(g, h100()))["floor_us"].get<double>(),
                   roofline_floor(g, h100()) * 1e6);
  EXPECT_EQ(j.dump(), cost_report_json(predict(g, h100())).dump());
}

std::string run_cli(const std::string& args, int* exit_code) {
  auto [rc, out] = test::run_weft(args);
  *exit_code = rc;
  return out;
}

TEST(CostCli, PrintsBreakdownTotalAndFloor) {
  int rc = -1;
  std::string example = weft::test::source_dir() + "/examples/rms_norm_linear.weft";
  std::string out = run_cli("cost " + example + " --target h100", &rc);
  EXPECT_EQ(rc, 0) << out;
  for (const char* s : {"rms_norm", "matmul", "memory", "total:", "roofline floor:", "waves"})
    EXPECT_NE(out.find(s), std::string::npos) << s << " missing in:\n" << out;
  out = run_cli("cost " + example + " --json", &rc);
  EXPECT_EQ(rc, 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["kernels"].size(), 2u);
  EXPECT_GT(j["roofline"]["floor_us"].get<double>(), 16.0);
  run_cli("cost no_such_file.weft", &rc);
  EXPECT_EQ(rc, 1);
  run_cli("cost " + example + " --target no_such_gpu", &rc);
  EXPECT_EQ(rc, 1);
}

}  // namespace
}  // namespace weft
