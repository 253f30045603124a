// Whole programs as one persistent kernel (mpk/runtime/megakernel_program.h): the task graph, the
// task bodies from the plan and the persistent kernel together, in host emulation (every CTA's
// threads at once). The outputs must equal the per-kernel CUDA emulation's bit for bit (each block
// runs the same code on the same data whatever the schedule), for 1-4 workers, AOT, JIT and hybrid
// dispatch and repeated iterations; every output element is written; decode loops of one launch
// per token give the per-kernel path's tokens and logits. On a GPU the same runs happen on the
// device (MpkMegakernelGpu, skipped here).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "core/target.h"
#include "interp/random_inputs.h"
#include "lower/pipeline.h"
#include "mpk/runtime/megakernel_program.h"
#include "mpk/runtime/per_kernel_decode.h"
#include "runtime/cuda_runtime.h"
#include "runtime/host_tensors.h"
#include "runtime/program.h"
#include "testing/decode_demo.h"
#include "tests/test_util.h"
#include "tests/tiers.h"

WEFT_TEST_TIERS("unit", "loads_generated");
WEFT_TEST_TIERS_OF("MpkMegakernelGpu.*", "gpu");

namespace weft {
namespace {

// The watchdog counts time without progress; emulated CTAs under ASan on a loaded machine can
// still take seconds for one operator that a waiting task depends on, so emulated runs here get
// a minute rather than the 10 s default.
constexpr double kEmulationWatchdogS = 60;

struct Case {
  const char* path;
  const char* reads;  // data-dependent kernels load tensors named so (hybrid dispatch)
};

const Case kCases[] = {{"examples/tiny_decoder_step.weft", "Kc"},
                       {"tests/golden/lower/gqa_attention.fused.weft", "K"},
                       {"tests/golden/mpk/fork.weft", "X"}};

struct Prepared {
  Graph graph;
  ProgramPlan plan;
  std::vector<std::vector<float>> inputs, per_kernel;
};

// The per-kernel reference runs in emulation on the host, or on the GPU for the GPU tests: the
// persistent kernel runs the same bodies, so on one device they agree bit for bit, while the host's
// and the GPU's arithmetic may differ in the last bits.
Prepared prepare(const Case& c, Backend reference = Backend::cuda_emulation) {
  Prepared p{test::load_graph_file(test::source_path(c.path)), {}, {}, {}};
  p.plan = lower_graph(p.graph, target_by_name("h100"));
  auto inputs = random_inputs(p.graph, 11);
  round_to_input_dtypes(p.graph, inputs);
  for (const auto& t : inputs) {
    auto [lo, hi] = std::minmax_element(t.data.begin(), t.data.end());
    EXPECT_LT(*lo, *hi) << c.path << ": a constant input";
  }
  p.inputs = host_buffers_of(inputs);
  p.per_kernel = load_program(p.plan, reference)->run(p.inputs);
  return p;
}

void expect_same(const Prepared& p, const std::vector<std::vector<float>>& got,
                 const std::string& what) {
  ASSERT_EQ(got.size(), p.per_kernel.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), p.per_kernel[i].size()) << what;
    EXPECT_EQ(std::count_if(got[i].begin(), got[i].end(), [](float v) { return std::isnan(v); }), 0)
        << what << ": output " << p.plan.outputs[i] << " has elements no task wrote";
    EXPECT_EQ(std::memcmp(got[i].data(), p.per_kernel[i].data(), got[i].size() * sizeof(float)), 0)
        << what << ": output " << p.plan.outputs[i] << " differs from the per-kernel run";
  }
  bool nonzero = false;
  for (const auto& o : p.per_kernel)
    for (float v : o) nonzero = nonzero || v != 0;
  EXPECT_TRUE(nonzero) << what << ": every reference output is zero";
}

MegakernelProgramOptions options_for(const Prepared& p, const Case& c, int workers, Dispatch d) {
  MegakernelProgramOptions o;
  o.mpk.assign = {workers, d};
  o.mpk.data_dependent = kernels_reading(p.plan, c.reads);
  o.kernel.schedulers = workers > 2 ? 2 : 1;
  o.kernel.watchdog_s = kEmulationWatchdogS;
  return o;
}

TEST(MpkMegakernelPlan, EmulatedRunEqualsThePerKernelRunBitForBit) {
  for (const Case& c : kCases) {
    Prepared p = prepare(c);
    for (int workers : {1, 2, 4})
      for (Dispatch d : {Dispatch::aot, Dispatch::jit, Dispatch::hybrid}) {
        const std::string what =
            fmt::format("{}, {} workers, {}", p.plan.name, workers, dispatch_name(d));
        SCOPED_TRACE(what);
        MegakernelProgram mk(p.plan, options_for(p, c, workers, d));
        for (uint64_t iterations : {1, 2}) {
          MegakernelResult r = mk.run(p.inputs, iterations, /*trace=*/iterations == 1);
          ASSERT_TRUE(r.run.ok) << r.run.report;
          expect_same(p, r.outputs, fmt::format("{}, {} iteration(s)", what, iterations));
          if (iterations == 1) {
            EXPECT_EQ(r.run.trace.size(), mk.compiled().graph.tasks.size());
          }
        }
      }
  }
}

// A body that does not fit the worker (more threads than it has) is refused before anything is
// built, naming the kernel.
TEST(MpkMegakernelPlan, ABodyWiderThanTheWorkerIsRefused) {
  Prepared p = prepare(kCases[0]);
  MegakernelProgramOptions o = options_for(p, kCases[0], 2, Dispatch::aot);
  o.bodies.worker_threads = 64;  // the decoder's kernels run 128 threads
  try {
    MegakernelProgram mk(p.plan, o);
    FAIL() << "a 64-thread worker was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos) << e.what();
  }
}

// A decode loop with one persistent-kernel launch per token (the host hooks between launches):
// the same tokens and the same logits, bit for bit, as the per-kernel path run step by step.
void expect_decodes_like_per_kernel(const char* path, const DecodeOptions& d, bool emulated) {
  SCOPED_TRACE(path);
  Graph g = test::load_graph_file(test::source_path(path));
  ProgramPlan plan = lower_graph(g, target_by_name("h100"));
  auto per_kernel = load_program(plan, emulated ? Backend::cuda_emulation : Backend::cuda);
  DecodeResult want = decode_with(plan, d, [&](const auto& in) { return per_kernel->run(in); });
  std::set<int> distinct(want.tokens.begin(), want.tokens.end());
  ASSERT_GT(distinct.size(), 2u) << "the decoded sequence is trivial";
  MegakernelProgramOptions o;
  o.mpk.assign = {emulated ? 3 : 16, Dispatch::hybrid};
  o.mpk.data_dependent = kernels_reading(plan, "Kc");
  o.kernel.schedulers = 2;
  o.kernel.watchdog_s = kEmulationWatchdogS;
  o.emulated = emulated;
  MegakernelProgram mk(plan, o);
  DecodeResult got = decode_with(plan, d, [&](const auto& in) {
    MegakernelResult r = mk.run(in);
    EXPECT_TRUE(r.run.ok) << r.run.report;
    return r.outputs;
  });
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_TRUE(got.logits == want.logits) << "logits differ from the per-kernel path";
}

TEST(MpkMegakernelPlan, DecodesTokenForTokenLikeThePerKernelPath) {
  DecodeOptions d;
  d.tokens = 8;
  expect_decodes_like_per_kernel("examples/tiny_decoder_step.weft", d, true);
  DecodeOptions q;
  q.tokens = 4;
  q.prompt = {5, 17};
  q.normal_std = 0.1;  // at 0.02 this shallow random model keeps predicting its input token
  expect_decodes_like_per_kernel("examples/qwen3_tiny_decode_step.weft", q, true);
}

TEST(MpkMegakernelPlan, CliDecodesOnTheEmulatedPersistentKernel) {
  // The host loop (one launch per token), then the decode loop on the device.
  auto [rc, out] = test::run_weft(
      fmt::format("mpk run {} --on emulation --tokens 4 --workers 3 --schedulers 2 --host-loop",
                  test::source_path("examples/tiny_decoder_step.weft")));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("identical tokens and logits"), std::string::npos) << out;
  EXPECT_NE(out.find("3 worker CTAs of 128 threads and a protocol warp"), std::string::npos) << out;
  auto [resident_rc, resident_out] = test::run_weft(
      fmt::format("mpk run {} --on emulation --tokens 4 --workers 3 --tokens-per-launch 2 --logits",
                  test::source_path("examples/tiny_decoder_step.weft")));
  EXPECT_EQ(resident_rc, 0) << resident_out;
  EXPECT_NE(resident_out.find("decode loop on the device"), std::string::npos) << resident_out;
  EXPECT_NE(resident_out.find("identical tokens and logits"), std::string::npos) << resident_out;
  EXPECT_NE(resident_out.find("2 launches of up to 2 tokens"), std::string::npos) << resident_out;
  EXPECT_NE(resident_out.find("none to the device"), std::string::npos) << resident_out;
  // The same bodies launched one by one with the loop on the device, timed too.
  EXPECT_NE(resident_out.find("tokens (per-kernel launches, loop on the device):"),
            std::string::npos)
      << resident_out;
  EXPECT_NE(resident_out.find("per-kernel launches: "), std::string::npos) << resident_out;
  // --no-host-reference: the per-kernel launches are the reference, the host loop does not run.
  auto [quick_rc, quick_out] = test::run_weft(
      fmt::format("mpk run {} --on emulation --tokens 2 --workers 2 --no-host-reference",
                  test::source_path("examples/tiny_decoder_step.weft")));
  ASSERT_EQ(quick_rc, 0) << quick_out;
  EXPECT_NE(quick_out.find("identical tokens"), std::string::npos) << quick_out;
  EXPECT_NE(quick_out.find("per-kernel launches, loop on the device"), std::string::npos)
      << quick_out;
  EXPECT_EQ(quick_out.find("host loop"), std::string::npos) << quick_out;
  // --trace: the decode loop on the device gives every step's tasks (3 steps in launches of 2
  // and 1), the host loop its last launch's.
  const std::string file =
      testing::TempDir() + "/weft_mpk_resident_trace_" + std::to_string(getpid()) + ".json";
  for (const char* loop : {"--tokens-per-launch 2", "--host-loop"}) {
    SCOPED_TRACE(loop);
    auto [trace_rc, trace_out] = test::run_weft(
        fmt::format("mpk run {} --on emulation --tokens 3 --workers 2 {} --trace '{}'",
                    test::source_path("examples/tiny_decoder_step.weft"), loop, file));
    ASSERT_EQ(trace_rc, 0) << trace_out;
    const size_t at = trace_out.find(" operators, ");
    ASSERT_NE(at, std::string::npos) << trace_out;
    const size_t tasks = std::stoul(trace_out.substr(at + 12));
    const nlohmann::json doc = nlohmann::json::parse(test::read_text(file));
    std::map<std::string, int> cats;
    std::set<std::pair<int64_t, int64_t>> runs;  // (step, task)
    for (const auto& e : doc.at("traceEvents"))
      if (e.at("ph") == "X") {
        ++cats[e.at("cat")];
        const auto& args = e.at("args");
        if (args.contains("task"))
          runs.insert({args.value("step", int64_t{-1}), args.at("task").get<int64_t>()});
      }
    const bool resident = std::string(loop) != "--host-loop";
    EXPECT_EQ(cats["task"] + cats["empty"], static_cast<int>((resident ? 3 : 1) * tasks));
    EXPECT_EQ(runs.size(), (resident ? 3 : 1) * tasks);
    EXPECT_EQ(cats["step"], resident ? 3 : 0);
    EXPECT_EQ(cats["launch"], resident ? 2 : 0);
    std::remove(file.c_str());
  }
  if (cuda_unavailable_reason().empty()) return;
  // Without a GPU, --on gpu is a clear error, not a crash.
  auto [gpu_rc, gpu_out] = test::run_weft(fmt::format(
      "mpk run {} --on gpu --tokens 2", test::source_path("examples/tiny_decoder_step.weft")));
  EXPECT_EQ(gpu_rc, 1) << gpu_out;
  EXPECT_NE(gpu_out.find("error: "), std::string::npos) << gpu_out;
}

// The whole unit of a real program (its plan's task bodies inside the persistent kernel)
// compiles for sm_80 and sm_90a with every warning an error: what a GPU machine will build.
TEST(MpkMegakernelPlan, TheUnitOfARealProgramCompilesWithNvcc) {
  std::string nvcc;
  try {
    nvcc = find_nvcc();
  } catch (const UserError&) {
    GTEST_SKIP() << "nvcc not found";
  }
  // The Qwen3-tiny step also with its decode loop on the device (the decode tasks' bodies), and
  // its per-kernel decode step (the same bodies launched one by one,
  // mpk/runtime/per_kernel_decode.h).
  std::vector<std::pair<std::string, std::string>> units;
  for (auto [path, decode_on_device] : {std::pair{"examples/tiny_decoder_step.weft", false},
                                        std::pair{"examples/qwen3_tiny_decode_step.weft", false},
                                        std::pair{"examples/qwen3_tiny_decode_step.weft", true}}) {
    ProgramPlan plan =
        lower_graph(test::load_graph_file(test::source_path(path)), target_by_name("h100"));
    MegakernelProgramOptions o;
    o.mpk.assign = {8, Dispatch::hybrid};
    o.mpk.data_dependent = kernels_reading(plan, "Kc");
    o.mpk.decode_on_device = decode_on_device;
    o.kernel.schedulers = 2;
    MegakernelProgram mk(plan, o);  // built for emulation; its text is the GPU's too
    units.emplace_back(
        fmt::format("{}{}", path, decode_on_device ? ", decode loop on the device" : ""),
        mk.unit());
    if (decode_on_device)
      units.emplace_back(fmt::format("{}, per-kernel decode step", path),
                         emit_per_kernel_decode_unit(plan));
  }
  for (const auto& [name, unit] : units) {
    SCOPED_TRACE(name);
    const std::string dir =
        testing::TempDir() + "/weft_megakernel_plan_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const std::string cu = dir + "/unit.cu", log = cu + ".log";
    std::ofstream(cu) << unit;
    const std::string cmd = fmt::format(
        "'{}' -std=c++17 -c -o /dev/null -t 2 -gencode arch=compute_80,code=sm_80 "
        "-gencode arch=compute_90a,code=sm_90a -Werror all-warnings "
        "-Xcompiler -Wall,-Wextra,-Werror '{}' > '{}' 2>&1",
        nvcc, cu, log);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << test::read_text(log).substr(0, 6000);
    std::filesystem::remove_all(dir);
  }
}

// Every tensor parameter of the block functions in `unit`: (tensor name, __restrict__ or not).
std::vector<std::pair<std::string, bool>> block_parameters(const std::string& unit,
                                                           const ProgramPlan& plan) {
  std::vector<std::pair<std::string, bool>> params;
  const std::regex param(R"((const )?\w+\* (__restrict__ )?T(\d+))");
  const std::string open = "WEFT_BLOCK_FN void ", close = ", [[maybe_unused]] const int bx";
  for (size_t at = unit.find(open); at != std::string::npos; at = unit.find(open, at + 1)) {
    const size_t from = unit.find('(', at), to = unit.find(close, at);
    const std::string list = unit.substr(from + 1, to - from - 1);
    for (std::sregex_iterator m(list.begin(), list.end(), param), end; m != end; ++m)
      params.emplace_back(plan.tensors.at(std::stoul((*m)[3].str())).name, (*m)[2].matched);
  }
  return params;
}

// A persistent unit's bodies take a tensor __restrict__ only when no task of the launch writes it:
// a const __restrict__ pointer lets the compiler load through the non-coherent path, which does
// not see another task's writes during the launch. Checked on the emitted units' block functions
// against every task's writes; the weights keep it, X (written by the decode loop's embedding
// task, not by the plan) does not, and the per-kernel decode step's bodies are the same.
TEST(MpkMegakernelPlan, BodiesRestrictOnlyTensorsNoTaskWrites) {
  for (auto [path, decode_on_device] :
       {std::pair{"examples/tiny_decoder_step.weft", true},
        std::pair{"examples/qwen3_tiny_decode_step.weft", true},
        std::pair{"tests/golden/lower/gqa_attention.fused.weft", false}}) {
    SCOPED_TRACE(path);
    const ProgramPlan plan =
        lower_graph(test::load_graph_file(test::source_path(path)), target_by_name("h100"));
    MegakernelProgramOptions o;
    o.mpk.assign = {4, Dispatch::hybrid};
    o.mpk.data_dependent = kernels_reading(plan, "Kc");
    o.mpk.decode_on_device = decode_on_device;
    const MegakernelUnit u = emit_megakernel_program_unit(plan, o);
    std::set<std::string> written;
    for (const Task& t : u.compiled.graph.tasks)
      for (const Access& a : t.writes) written.insert(u.compiled.graph.tensors[a.tensor].name);
    const auto params = block_parameters(u.unit, plan);
    ASSERT_FALSE(params.empty());
    int restricted = 0;
    for (const auto& [name, restrict] : params) {
      restricted += restrict;
      EXPECT_FALSE(restrict && written.count(name)) << name << " is written during the launch";
    }
    EXPECT_GT(restricted, 0) << "the weights are read-only";
    if (!decode_on_device) continue;
    const std::string x = plan.inputs.at(decode_interface(plan).x);
    EXPECT_TRUE(written.count(x));
    EXPECT_TRUE(
        std::any_of(params.begin(), params.end(), [&](const auto& p) { return p.first == x; }))
        << x << " is a body's parameter";
    EXPECT_EQ(block_parameters(emit_per_kernel_decode_unit(plan), plan), params);
  }
}

// On a GPU: the same programs as one cooperative launch, against the per-kernel emulation's
// outputs (bit for bit where the code is the same, as in emulation).
TEST(MpkMegakernelGpu, RunEqualsThePerKernelRun) {
  if (!cuda_unavailable_reason().empty()) GTEST_SKIP() << cuda_unavailable_reason();
  for (const Case& c : kCases) {
    Prepared p = prepare(c, Backend::cuda);
    for (Dispatch d : {Dispatch::aot, Dispatch::hybrid}) {
      MegakernelProgramOptions o = options_for(p, c, 8, d);
      o.emulated = false;
      MegakernelProgram mk(p.plan, o);
      MegakernelResult r = mk.run(p.inputs, 3, true);
      ASSERT_TRUE(r.run.ok) << r.run.report;
      expect_same(p, r.outputs, fmt::format("{} on the GPU, {}", p.plan.name, dispatch_name(d)));
    }
  }
}

TEST(MpkMegakernelGpu, DecodesTokenForTokenLikeThePerKernelPath) {
  if (!cuda_unavailable_reason().empty()) GTEST_SKIP() << cuda_unavailable_reason();
  DecodeOptions d;
  d.tokens = 16;
  expect_decodes_like_per_kernel("examples/tiny_decoder_step.weft", d, false);
  DecodeOptions q;
  q.tokens = 16;
  q.prompt = {5, 17};
  q.normal_std = 0.1;
  expect_decodes_like_per_kernel("examples/qwen3_tiny_decode_step.weft", q, false);
}

}  // namespace
}  // namespace weft
