// `weft mpk compile FILE -o DIR` and `weft mpk run FILE`: the MPK task-graph compiler (mpk/) and
// its host runtime. compile writes NAME.tgraph, NAME.mpk (the encoded blob), NAME.tgraph.dot and
// prints a summary; run executes the task graph on host threads and compares with the kernels
// run one after another (a decoder step program decodes tokens; any other program runs its
// iterations on seeded inputs); --trace writes every task's span as a Chrome/Perfetto trace
// (with the decode loop on the device, every task of every step);
// --on emulation|gpu runs the program as one persistent kernel (mpk/megakernel_program.h) in host
// emulation or on the GPU against the per-kernel CUDA path; a decode-step program decodes with
// the decode loop on the device (--tokens-per-launch N), against the same bodies launched one by
// one with the loop on the device too (and on a GPU as a CUDA graph), or with --host-loop one
// launch per token.
// decoder writes a Qwen3-shaped decode-step program.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>

#include "core/target.h"
#include "exec/npz.h"
#include "lower/pipeline.h"
#include "mpk/compile.h"
#include "mpk/decode_demo.h"
#include "mpk/decoder_program.h"
#include "mpk/encode.h"
#include "mpk/hop_chain.h"
#include "mpk/host_runtime.h"
#include "mpk/megakernel_bench.h"
#include "mpk/megakernel_program.h"
#include "mpk/per_kernel_decode.h"
#include "mpk/tgraph_dot.h"
#include "mpk/tgraph_text.h"
#include "mpk/trace.h"
#include "runtime/cuda_runtime.h"
#include "runtime/program.h"
#include "tools/weft/command.h"

namespace weft::cli {
namespace {

struct MpkArgs {
  std::string file;
  int workers = 4;
  std::string dispatch = "hybrid";
  std::vector<std::string> data_dependent;
  std::string data_dependent_reads = "Kc";
};

void add_common(CLI::App* sub, MpkArgs& a) {
  sub->add_option("FILE", a.file, "µGraph file")->required();
  sub->add_option("--workers", a.workers,
                  "Workers (one per SM on a GPU; with --on emulation|gpu and in bench, 0: one per "
                  "SM but one on a GPU, 4 in emulation)")
      ->capture_default_str();
  sub->add_option("--dispatch", a.dispatch, "aot, jit or hybrid")->capture_default_str();
  sub->add_option("--data-dependent", a.data_dependent,
                  "Plan kernels (k0, k1, ...) that are data-dependent (hybrid: dispatched JIT)");
  sub->add_option("--data-dependent-reads", a.data_dependent_reads,
                  "Also mark the kernels loading a tensor named with this prefix")
      ->capture_default_str();
}

struct Built {
  ProgramPlan plan;
  MpkCompiled compiled;
  std::string stem;
  std::map<std::string, DType> declared;  // the program's input dtypes (CPU plans store f32)
};

Built build(const MpkArgs& a, const std::string& stop_after = "") {
  Graph g = load_graph(a.file);
  Built b;
  b.stem = g.name.empty() ? std::filesystem::path(a.file).stem().string() : g.name;
  b.plan = lower_graph(g, target_by_name("cpu"));
  for (ValueId id : g.inputs) b.declared[g.value(id).name] = g.value(id).type.dtype;
  MpkOptions o;
  o.assign = {a.workers, dispatch_by_name(a.dispatch)};
  o.data_dependent.insert(a.data_dependent.begin(), a.data_dependent.end());
  if (!a.data_dependent_reads.empty()) {
    auto more = kernels_reading(b.plan, a.data_dependent_reads);
    o.data_dependent.insert(more.begin(), more.end());
  }
  o.stop_after = stop_after;
  b.compiled = compile_task_graph(b.plan, o);
  return b;
}

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out) throw UserError(fmt::format("cannot write {}", path.string()));
}

void print_summary(const Built& b) {
  const TaskGraph& g = b.compiled.graph;
  TaskGraphStats s = stats_of(g);
  fmt::print("{}: {} operators, {} tasks ({} empty, {} jit), {} events ({} before fusion)\n",
             b.stem, g.ops.size(), s.tasks, s.empty_tasks, s.jit_tasks, s.events,
             b.compiled.events_before_fusion);
  fmt::print(
      "  dependencies: {} read-after-write, {} write-after-read, {} write-after-write pairs; "
      "{} edges after reduction\n",
      b.compiled.deps.raw, b.compiled.deps.war, b.compiled.deps.waw, b.compiled.deps.edges);
  if (g.workers > 0) {
    const WorkerBalance& w = b.compiled.balance;
    fmt::print(
        "  {} workers, dispatch {}; AOT lists: imbalance (largest / mean) {:.3f} in predicted "
        "time, {:.3f} in bytes\n",
        g.workers, dispatch_name(g.dispatch), w.time_imbalance, w.bytes_imbalance);
    fmt::print("  per worker, predicted µs / MB / tasks:");
    for (size_t i = 0; i < w.tasks.size(); ++i)
      fmt::print(" w{}={:.1f}/{:.2f}/{}", i, w.time_ns[i] * 1e-3, w.bytes[i] * 1e-6, w.tasks[i]);
    fmt::print("\n");
  }
  if (!b.compiled.blob.empty())
    fmt::print("  blob {} bytes; compiled and verified in {:.2f} ms\n", b.compiled.blob.size(),
               b.compiled.seconds * 1e3);
}

// `weft mpk decoder`: writes a Qwen3-shaped decode-step program (mpk/decoder_program.h).
struct DecoderArgs {
  std::string config = "qwen3-tiny", dtype = "bf16", output;
  int64_t cache = 0;
  // Kernel shapes (DecoderConfig); 0: the preset's.
  int64_t tile = 0, k_chunk = 0, kv_splits = 0, cache_chunk = 0;
};

CLI::App* add_decoder(CLI::App& sub, DecoderArgs& a) {
  CLI::App* d = sub.add_subcommand("decoder", "Write a Qwen3-shaped decode-step program");
  d->add_option("--config", a.config, fmt::format("{}", fmt::join(decoder_presets(), " or ")))
      ->capture_default_str();
  d->add_option("--cache", a.cache, "KV-cache positions (default: the preset's)");
  d->add_option("--dtype", a.dtype, "Tensor dtype: bf16 or f32")->capture_default_str();
  d->add_option("--tile", a.tile,
                "Output columns per block of a projection kernel (default: the preset's)");
  d->add_option("--k-chunk", a.k_chunk,
                "Reduction rows per loop iteration (default: the preset's)");
  d->add_option("--kv-splits", a.kv_splits,
                "Attention blocks per KV head along the cache (default: the preset's)");
  d->add_option("--cache-chunk", a.cache_chunk,
                "Cache positions per attention loop iteration (default: the preset's)");
  d->add_option("-o,--output", a.output, "Output .weft file")->required();
  return d;
}

int run_decoder(const DecoderArgs& a) {
  DecoderConfig c = decoder_config(a.config);
  if (a.cache != 0) c.cache = a.cache;
  for (auto [value, field] :
       {std::pair{a.tile, &c.tile}, std::pair{a.k_chunk, &c.k_chunk},
        std::pair{a.kv_splits, &c.kv_splits}, std::pair{a.cache_chunk, &c.cache_chunk}}) {
    if (value < 0)
      throw UserError(fmt::format("a kernel shape of {}: expected a positive number", value));
    if (value != 0) *field = value;
  }
  if (a.dtype != "bf16" && a.dtype != "f32")
    throw UserError(fmt::format("--dtype {}: expected bf16 or f32", a.dtype));
  c.dtype = a.dtype == "bf16" ? DType::bf16 : DType::f32;
  write(a.output, decoder_program(c));
  fmt::print("{}: {} layers, {} weight bytes per step ({})\n", a.output, c.layers,
             decoder_weight_bytes(c), dtype_name(c.dtype));
  return 0;
}

// `weft mpk run --dump DIR`: DIR/weights.npz (every weight as filled, f32 values) and
// DIR/decode.npz (tokens, per-step logits, RoPE theta), for an independent reference.
void write_dump(const std::string& dir, const DecodeOptions& d, const DecodeResult& r) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UserError(fmt::format("cannot create {}: {}", dir, ec.message()));
  auto as_tensor = [](const Shape& shape, const std::vector<float>& v) {
    return Tensor<double>(shape, std::vector<double>(v.begin(), v.end()));
  };
  std::map<std::string, Tensor<double>> weights;
  for (const NamedValues& w : r.weights) weights.emplace(w.name, as_tensor(w.shape, w.values));
  write_npz((std::filesystem::path(dir) / "weights.npz").string(), weights);
  std::vector<float> logits, tokens(r.tokens.begin(), r.tokens.end());
  for (const auto& l : r.logits) logits.insert(logits.end(), l.begin(), l.end());
  const int64_t steps = static_cast<int64_t>(r.logits.size());
  std::map<std::string, Tensor<double>> decode;
  decode.emplace("tokens", as_tensor({static_cast<int64_t>(tokens.size())}, tokens));
  decode.emplace(
      "logits",
      as_tensor({steps, steps ? static_cast<int64_t>(logits.size()) / steps : 0}, logits));
  decode.emplace("rope_theta", Tensor<double>({1}, std::vector<double>{d.rope_theta}));
  write_npz((std::filesystem::path(dir) / "decode.npz").string(), decode, true);
}

// Options of `weft mpk run` that the persistent-kernel path shares with the host one.
struct RunArgs {
  int tokens = 8;
  uint32_t schedulers = 1;
  std::string trace_file;
  DecodeOptions decode;
  // --on emulation|gpu with a decode-step program: the decode loop on the device (resident
  // state, tokens_per_launch steps per launch) unless host_loop (one launch per token, the host
  // hooks between launches).
  int tokens_per_launch = 1;
  bool host_loop = false;
  // The decode loop on the device: also decode on the per-kernel path with the host hooks (every
  // input copied each step: minutes for a 0.6B-sized step's 256 tokens) as a reference.
  bool host_reference = true;
  bool logits = false;  // resident: also compare each launch's last logits
};

// `weft mpk run FILE --on emulation|gpu`: the program lowered for the GPU (h100 in emulation, the
// device's target on a GPU) as one persistent kernel, against its per-kernel CUDA path: a
// decode-step program decodes with its loop on the device (or, --host-loop, one launch per token
// with the host hooks between); any other runs once on seeded inputs.
// The program lowered for the GPU (the device's target, or h100 in emulation) and its persistent
// kernel's options.
struct GpuBuilt {
  Graph graph;
  const Target* target = nullptr;
  ProgramPlan plan;
  MegakernelProgramOptions options;
};

// `target`: lower for it instead (no device needed).
GpuBuilt gpu_build(const MpkArgs& a, uint32_t schedulers, bool gpu,
                   const Target* target = nullptr) {
  GpuBuilt b;
  b.graph = load_graph(a.file);
  b.target = target ? target
             : gpu  ? &target_for_device(require_cuda_device())
                    : &target_by_name("h100");
  b.plan = lower_graph(b.graph, *b.target);
  MegakernelProgramOptions& o = b.options;
  o.mpk.assign = {a.workers, dispatch_by_name(a.dispatch)};
  o.mpk.data_dependent.insert(a.data_dependent.begin(), a.data_dependent.end());
  if (!a.data_dependent_reads.empty()) {
    auto more = kernels_reading(b.plan, a.data_dependent_reads);
    o.mpk.data_dependent.insert(more.begin(), more.end());
  }
  o.kernel.schedulers = schedulers;
  o.emulated = !gpu;
  o.arch = b.target->arch;
  return b;
}

// Seeded uniform inputs in [-1, 1) for every input of `plan`.
std::vector<std::vector<float>> seeded_inputs(const ProgramPlan& plan) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::vector<float>> in;
  for (const std::string& name : plan.inputs) {
    in.emplace_back(static_cast<size_t>(numel(plan.find_tensor(name)->shape)));
    for (float& v : in.back()) v = u(rng);
  }
  return in;
}

std::string timing_text(const Timing& t) {
  return fmt::format("{:.1f} µs (min {:.1f}, max {:.1f}, {} runs)", t.median_s * 1e6, t.min_s * 1e6,
                     t.max_s * 1e6, t.reps);
}

// `weft mpk bench FILE --on emulation|gpu`: the per-kernel launches, their CUDA graph and the
// persistent kernel, timed on the same seeded inputs, against the weight-bandwidth floor.
// Worker CTAs when --workers is 0: one per SM but one (left to the scheduler CTA, which must be
// resident too) on a GPU, 4 in emulation.
int default_workers(bool gpu) {
  return gpu ? std::max(1, require_cuda_device().sms - 1) : 4;
}

int bench_megakernel_command(MpkArgs a, uint32_t schedulers, bool gpu,
                             const MegakernelBenchOptions& bo) {
  if (a.workers == 0) a.workers = default_workers(gpu);
  GpuBuilt b = gpu_build(a, schedulers, gpu);
  MegakernelProgram mk(b.plan, b.options);
  auto per_kernel = load_program(b.plan, gpu ? Backend::cuda : Backend::cuda_emulation);
  fmt::print("{} on {} ({}): {} tasks on {} workers ({}), {} plan kernels\n",
             b.graph.name.empty() ? a.file : b.graph.name, b.target->name,
             gpu ? "GPU" : "host emulation: thread times, not GPU times",
             mk.compiled().graph.tasks.size(), a.workers, a.dispatch, b.plan.kernels.size());
  MegakernelBench r = bench_megakernel(mk, *per_kernel, seeded_inputs(b.plan), bo);
  std::optional<Timing> resident, resident_batched, per_kernel_decode, per_kernel_graph;
  int resident_tokens = 0;
  if (b.plan.find_tensor("LOGITS") && b.plan.find_tensor("M")) {
    // The decode loop on the device: per-token time of whole decodes, state resident.
    b.options.mpk.decode_on_device = true;
    MegakernelProgram loop(b.plan, b.options);
    resident_tokens = static_cast<int>(std::min<int64_t>(decode_interface(b.plan).ctx, 32));
    // Each decode seeds and places the weights again (untimed; seconds at the 0.6B size).
    const int reps = std::max(1, bo.reps / 10);
    resident = bench_resident_decode(loop, resident_tokens, 1, reps);
    if (bo.iterations_per_launch > 1)
      resident_batched = bench_resident_decode(
          loop, resident_tokens,
          static_cast<int>(std::min<uint64_t>(bo.iterations_per_launch, resident_tokens)), reps);
    // The same bodies launched one by one, the decode loop's too, and (GPU) as a CUDA graph.
    const PerKernelDecoder per_kernel_loop(b.plan, !gpu);
    per_kernel_decode = bench_per_kernel_decode(per_kernel_loop, resident_tokens, false, reps);
    if (gpu && resident_tokens > 1)
      per_kernel_graph = bench_per_kernel_decode(per_kernel_loop, resident_tokens, true, reps);
  }
  fmt::print("  per-kernel launches:     {}\n", timing_text(r.per_kernel));
  if (r.cuda_graph) fmt::print("  per-kernel CUDA graph:   {}\n", timing_text(*r.cuda_graph));
  fmt::print("  persistent kernel:       {} per launch of one step\n", timing_text(r.persistent));
  if (r.persistent_batched)
    fmt::print("  persistent kernel:       {} per step, {} steps per launch\n",
               timing_text(*r.persistent_batched), r.batched_iterations);
  if (resident)
    fmt::print("  decode loop on device:   {} per token, 1 token per launch ({} tokens)\n",
               timing_text(*resident), resident_tokens);
  if (resident_batched)
    fmt::print("  decode loop on device:   {} per token, {} tokens per launch\n",
               timing_text(*resident_batched),
               std::min<uint64_t>(bo.iterations_per_launch, resident_tokens));
  if (per_kernel_decode)
    fmt::print("  per-kernel device loop:  {} per token, the step's kernels launched one by one\n",
               timing_text(*per_kernel_decode));
  if (per_kernel_graph)
    fmt::print("  its CUDA graph:          {} per token, one graph replay per token\n",
               timing_text(*per_kernel_graph));
  fmt::print("  weight bytes per step:   {}\n", r.weight_bytes);
  if (r.bandwidth_bytes_per_s) {
    const double floor = *r.floor_s();
    fmt::print("  copy bandwidth:          {:.0f} GB/s (device-to-device cudaMemcpy)\n",
               *r.bandwidth_bytes_per_s * 1e-9);
    fmt::print(
        "  weight floor:            {:.1f} µs; persistent kernel at {:.0f}% of it, CUDA "
        "graph at {:.0f}%\n",
        floor * 1e6, 100 * floor / r.persistent.median_s, 100 * floor / r.cuda_graph->median_s);
    if (resident)
      fmt::print("  decode loop on device:   {:.0f}% of the floor (1 token per launch){}\n",
                 100 * floor / resident->median_s,
                 resident_batched
                     ? fmt::format(", {:.0f}% (batched)", 100 * floor / resident_batched->median_s)
                     : std::string());
    if (per_kernel_decode)
      fmt::print("  per-kernel device loop:  {:.0f}% of the floor (launches){}\n",
                 100 * floor / per_kernel_decode->median_s,
                 per_kernel_graph ? fmt::format(", {:.0f}% (CUDA graph)",
                                                100 * floor / per_kernel_graph->median_s)
                                  : std::string());
  }
  return 0;
}

// `weft mpk unit FILE -o FILE.cu`: the persistent kernel's unit for a GPU target, as
// MegakernelProgram builds it, for reading or compiling by hand.
int write_unit_command(MpkArgs a, const std::string& target_name, bool decode_loop,
                       uint32_t schedulers, const std::string& out) {
  const Target& target = target_by_name(target_name);
  if (target.kind != TargetKind::gpu)
    throw UserError(
        fmt::format("--target {}: the persistent kernel needs a GPU target", target.name));
  GpuBuilt b = gpu_build(a, schedulers, false, &target);
  b.options.mpk.decode_on_device = decode_loop;
  MegakernelUnit u = emit_megakernel_program_unit(b.plan, b.options);
  write(out, u.unit);
  fmt::print(
      "{}: {} tasks on {} workers (AOT imbalance {:.3f} in predicted time, {:.3f} in bytes), {} "
      "plan kernels, {} worker threads, {} B of body shared memory; wrote {} ({} bytes; nvcc "
      "-arch={})\n",
      b.graph.name.empty() ? a.file : b.graph.name, u.compiled.graph.tasks.size(), a.workers,
      u.compiled.balance.time_imbalance, u.compiled.balance.bytes_imbalance, b.plan.kernels.size(),
      u.fit.worker_threads, u.fit.body_smem_bytes, out, u.unit.size(), target.arch);
  return 0;
}

// `weft mpk hop --on emulation|gpu`: the empty-task chain's dependent-hop latency.
int bench_hops_command(const HopBenchOptions& o) {
  HopBench h = bench_hops(o);
  fmt::print("empty-task chain: {} tasks on {} workers ({}), {} ({})\n", o.tasks, o.workers,
             o.jit ? "jit" : "aot", o.emulated ? "host emulation" : "GPU",
             o.emulated ? "thread times, not GPU times" : "one persistent kernel");
  fmt::print("  hop (trace, {} hops):   median {:.0f} ns, min {:.0f}, max {:.0f}, mean {:.0f}\n",
             h.hops.hops, h.hops.median_ns, h.hops.min_ns, h.hops.max_ns, h.hops.mean_ns);
  fmt::print("  launch, {} tasks:        {}\n", o.tasks, timing_text(h.chain));
  fmt::print("  launch, 2 tasks:          {}\n", timing_text(h.pair));
  fmt::print("  per hop from launches:    {:.0f} ns\n", h.launch_per_hop_s * 1e9);
  return 0;
}

// The decode loop on the device: the persistent kernel's tokens against the per-kernel decode
// loop on the device (the same bodies launched one by one, and on a GPU as a CUDA graph) and the
// per-kernel path with host hooks (`want`); the traffic and time per token of each.
bool run_resident(const MegakernelProgram& mk, const RunArgs& r,
                  const std::optional<DecodeResult>& host_loop, bool gpu) {
  const ResidentDecode got =
      mk.decode(r.decode, {r.tokens_per_launch, r.logits, !r.trace_file.empty()});
  const PerKernelDecoder per_kernel(mk.plan(), !gpu);
  std::vector<std::pair<std::string, PerKernelDecode>> loops;
  loops.emplace_back("per-kernel launches", per_kernel.decode(r.decode, {false, r.logits}));
  if (gpu && r.tokens > 1)
    loops.emplace_back("per-kernel CUDA graph", per_kernel.decode(r.decode, {true, r.logits}));
  fmt::print("  tokens (persistent kernel, decode loop on the device): {}\n",
             fmt::join(got.decode.tokens, " "));
  for (const auto& [name, loop] : loops)
    fmt::print("  {:<54} {}\n", fmt::format("tokens ({}, loop on the device):", name),
               fmt::join(loop.decode.tokens, " "));
  if (host_loop)
    fmt::print("  tokens (per-kernel path, host loop):                   {}\n",
               fmt::join(host_loop->tokens, " "));
  // The reference: the host loop's, or without it the per-kernel launches'.
  const DecodeResult& want = host_loop ? *host_loop : loops.front().second.decode;
  bool same = got.decode.tokens == want.tokens;
  for (const auto& [name, loop] : loops)
    same = same && loop.decode.tokens == want.tokens &&
           (!r.logits || loop.decode.logits == want.logits);
  if (r.logits)
    for (size_t l = 0; l < got.decode.logits.size(); ++l) {
      const size_t step = std::min<size_t>(want.logits.size(), (l + 1) * r.tokens_per_launch) - 1;
      same = same && got.decode.logits[l] == want.logits[step];
    }
  fmt::print("  {}\n", !same      ? "MISMATCH"
                       : r.logits ? "identical tokens and logits"
                                  : "identical tokens");
  const char* kind =
      gpu ? " (host wall time of launch and wait)" : " (host emulation: not a GPU time)";
  fmt::print(
      "  {} launch{} of up to {} token{}: {:.3f} ms per token{}; placed once: {} bytes; per "
      "launch: {} bytes to the host, none to the device\n",
      got.launches, got.launches == 1 ? "" : "es", r.tokens_per_launch,
      r.tokens_per_launch == 1 ? "" : "s", got.decode.run.seconds * 1e3 / r.tokens, kind,
      got.setup_bytes, got.bytes_per_launch);
  if (!r.trace_file.empty()) {
    std::vector<std::string> kernels;
    for (const Operator& op : mk.compiled().graph.ops) kernels.push_back(op.kernel);
    write(r.trace_file, chrome_trace_json(decode_task_graph(mk.compiled().blob), got.traces,
                                          kernels, mk.plan().name));
    fmt::print("  wrote the trace of {} launch{} ({} steps of {} tasks) to {}\n", got.traces.size(),
               got.traces.size() == 1 ? "" : "es", r.tokens, mk.compiled().graph.tasks.size(),
               r.trace_file);
  }
  for (const auto& [name, loop] : loops) {
    const bool graph = loop.graph_steps > 0;
    const double seconds = graph ? loop.graph_seconds : loop.launched_seconds;
    const int64_t steps = graph ? loop.graph_steps : loop.launched_steps;
    fmt::print(
        "  {}: {:.3f} ms per token{}{}; per step: {} bytes to the host, none to the device\n", name,
        seconds * 1e3 / static_cast<double>(steps),
        graph ? fmt::format(" (the {} replays after the first step)", steps) : "", kind,
        loop.bytes_per_step);
  }
  return same;
}

int run_megakernel(MpkArgs a, const RunArgs& r, bool gpu) {
  if (a.workers == 0) a.workers = default_workers(gpu);
  GpuBuilt built = gpu_build(a, r.schedulers, gpu);
  const Graph& g = built.graph;
  const Target& target = *built.target;
  const ProgramPlan& plan = built.plan;
  const bool decoder = plan.find_tensor("LOGITS") && plan.find_tensor("M");
  const bool resident = decoder && !r.host_loop;
  built.options.mpk.decode_on_device = resident;
  MegakernelProgram mk(plan, built.options);
  Built shown{plan, mk.compiled(), g.name, {}};
  print_summary(shown);
  fmt::print(
      "  one persistent kernel on {} ({}): {} worker CTAs of {} threads and a protocol warp, "
      "{} B of body shared memory\n",
      target.name, gpu ? "GPU" : "host emulation", a.workers, mk.fit().worker_threads,
      mk.fit().body_smem_bytes);
  if (resident) {
    std::optional<DecodeResult> host_loop;
    if (r.host_reference) {
      auto per_kernel = load_program(plan, gpu ? Backend::cuda : Backend::cuda_emulation);
      host_loop = decode_with(plan, r.decode, [&](const auto& in) { return per_kernel->run(in); });
    }
    return run_resident(mk, r, host_loop, gpu) ? 0 : 3;
  }
  auto per_kernel = load_program(plan, gpu ? Backend::cuda : Backend::cuda_emulation);
  std::vector<TaskSpan> last_trace;
  double kernel_s = 0;
  auto launch = [&](const std::vector<std::vector<float>>& in) {
    MegakernelResult m = mk.run(in, 1, !r.trace_file.empty());
    if (!m.run.ok) throw UserError(m.run.report);
    kernel_s += m.run.seconds;
    last_trace = std::move(m.run.trace);
    return m.outputs;
  };
  bool same = false;
  int steps = 1;
  if (decoder) {
    steps = r.tokens;
    DecodeResult want =
        decode_with(plan, r.decode, [&](const auto& in) { return per_kernel->run(in); });
    DecodeResult got = decode_with(plan, r.decode, launch);
    fmt::print("  tokens (persistent kernel): {}\n", fmt::join(got.tokens, " "));
    fmt::print("  tokens (per-kernel path):   {}\n", fmt::join(want.tokens, " "));
    same = got.tokens == want.tokens && got.logits == want.logits;
    fmt::print("  {}\n", same                        ? "identical tokens and logits"
                         : got.tokens == want.tokens ? "identical tokens, logits differ"
                                                     : "MISMATCH");
  } else {
    std::vector<std::vector<float>> in = seeded_inputs(plan);
    same = launch(in) == per_kernel->run(in);
    fmt::print("  outputs {}\n", same ? "identical to the per-kernel path" : "DIFFER");
  }
  fmt::print("  {} launch{}: {:.3f} ms per launch{}\n", steps, steps == 1 ? "" : "es",
             kernel_s * 1e3 / steps, gpu ? "" : " (host emulation: not a GPU time)");
  if (!r.trace_file.empty()) {
    write(r.trace_file,
          chrome_trace_json(decode_task_graph(mk.compiled().blob), last_trace, shown.stem));
    fmt::print("  wrote the trace of the last launch ({} task runs) to {}\n", last_trace.size(),
               r.trace_file);
  }
  return same ? 0 : 3;
}

}  // namespace

static Register reg(
    "mpk", "Compile a program into an MPK task graph, or run it on the host runtime",
    [](CLI::App& sub) {
      sub.require_subcommand(1);
      auto a = std::make_shared<MpkArgs>();
      auto out_dir = std::make_shared<std::string>();
      auto stop = std::make_shared<std::string>();
      CLI::App* compile =
          sub.add_subcommand("compile", "Write NAME.tgraph, NAME.mpk, NAME.tgraph.dot");
      add_common(compile, *a);
      compile->add_option("-o,--output", *out_dir, "Output directory")->required();
      compile->add_option("--stop-after", *stop, "Stop after this pass (decompose, deps, ...)");
      auto b = std::make_shared<MpkArgs>();
      auto tokens = std::make_shared<int>(8);
      auto schedulers = std::make_shared<uint32_t>(1);
      auto delay_seed = std::make_shared<uint64_t>(0);
      auto trace_file = std::make_shared<std::string>();
      CLI::App* run =
          sub.add_subcommand("run", "Run on host threads and compare with sequential execution");
      add_common(run, *b);
      run->add_option("--tokens", *tokens, "Decoded tokens (iterations)")->capture_default_str();
      run->add_option("--schedulers", *schedulers, "Scheduler threads")->capture_default_str();
      run->add_option("--delay-seed", *delay_seed, "Nonzero: inject seeded random delays");
      run->add_option("--trace", *trace_file,
                      "Write each task's span (start, end, worker) as a Chrome/Perfetto trace "
                      "(the decode loop on the device: every step of every launch; --host-loop: "
                      "the last launch)");
      auto dump = std::make_shared<std::string>();
      auto prompt = std::make_shared<std::vector<int>>();
      run->add_option("--dump", *dump, "Decoder: write DIR/weights.npz and DIR/decode.npz");
      run->add_option("--prompt", *prompt, "Decoder: tokens fed before greedy decoding");
      auto seed = std::make_shared<uint64_t>(1);
      auto init_std = std::make_shared<double>(0.02);
      run->add_option("--seed", *seed, "Decoder: seed of the weights")->capture_default_str();
      run->add_option("--init-std", *init_std,
                      "Decoder: standard deviation of normal weights (programs with EMB)")
          ->capture_default_str();
      auto on = std::make_shared<std::string>("host");
      run->add_option("--on", *on,
                      "host (threads, CPU bodies), emulation or gpu (one persistent kernel)")
          ->check(CLI::IsMember({"host", "emulation", "gpu"}))
          ->capture_default_str();
      auto per_launch = std::make_shared<int>(1);
      auto host_loop = std::make_shared<bool>(false);
      auto logits = std::make_shared<bool>(false);
      run->add_option("--tokens-per-launch", *per_launch,
                      "With --on emulation|gpu: decode steps per launch of the decode loop on the "
                      "device")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
      run->add_flag("--host-loop", *host_loop,
                    "With --on emulation|gpu: one launch per token with the decode loop's work "
                    "(embedding, rotary tables, cache append, argmax) on the host between "
                    "launches");
      auto no_host_reference = std::make_shared<bool>(false);
      run->add_flag("--no-host-reference", *no_host_reference,
                    "With the decode loop on the device: compare with the per-kernel launches "
                    "only, not also with the per-kernel path driven by host hooks (slow at a "
                    "real size: every input is copied each step)");
      run->add_flag("--logits", *logits,
                    "With the decode loop on the device: copy back and compare each launch's "
                    "last logits");
      auto dec = std::make_shared<DecoderArgs>();
      CLI::App* decoder = add_decoder(sub, *dec);
      auto ba = std::make_shared<MpkArgs>();
      auto bo = std::make_shared<MegakernelBenchOptions>();
      auto bench_on = std::make_shared<std::string>("emulation");
      auto bench_schedulers = std::make_shared<uint32_t>(1);
      CLI::App* bench = sub.add_subcommand(
          "bench",
          "Time the per-kernel launches, their CUDA graph and the persistent kernel on seeded "
          "inputs, against the weight-bandwidth floor");
      ba->workers = 0;
      add_common(bench, *ba);
      bench->add_option("--on", *bench_on, "emulation or gpu")
          ->check(CLI::IsMember({"emulation", "gpu"}))
          ->capture_default_str();
      bench->add_option("--schedulers", *bench_schedulers, "Scheduler warps")
          ->capture_default_str();
      bench->add_option("--warmup", bo->warmup, "Untimed runs")->capture_default_str();
      bench->add_option("--reps", bo->reps, "Timed runs")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
      bench
          ->add_option("--iterations-per-launch", bo->iterations_per_launch,
                       "Also time this many steps in one launch (0: no)")
          ->capture_default_str();
      auto ho = std::make_shared<HopBenchOptions>();
      auto hop_on = std::make_shared<std::string>("emulation");
      auto hop_dispatch = std::make_shared<std::string>("aot");
      CLI::App* hop = sub.add_subcommand(
          "hop", "Measure the persistent kernel's dependent-hop latency on an empty-task chain");
      hop->add_option("--on", *hop_on, "emulation or gpu")
          ->check(CLI::IsMember({"emulation", "gpu"}))
          ->capture_default_str();
      hop->add_option("--tasks", ho->tasks, "Chain length")->capture_default_str();
      ho->workers = 0;
      hop->add_option("--workers", ho->workers,
                      "Worker CTAs, the chain crossing them in turn (0: one per SM but one on a "
                      "GPU, 4 in emulation)")
          ->capture_default_str();
      hop->add_option("--dispatch", *hop_dispatch, "aot or jit")
          ->check(CLI::IsMember({"aot", "jit"}))
          ->capture_default_str();
      hop->add_option("--schedulers", ho->schedulers, "Scheduler warps")->capture_default_str();
      hop->add_option("--threads", ho->worker_threads, "Threads per worker CTA")
          ->capture_default_str();
      hop->add_option("--reps", ho->reps, "Traced launches")->capture_default_str();
      auto ua = std::make_shared<MpkArgs>();
      auto unit_out = std::make_shared<std::string>();
      auto unit_target = std::make_shared<std::string>("h100");
      auto unit_decode = std::make_shared<bool>(false);
      auto unit_schedulers = std::make_shared<uint32_t>(1);
      CLI::App* unit = sub.add_subcommand(
          "unit", "Write the persistent kernel's CUDA unit (what --on gpu compiles with nvcc)");
      add_common(unit, *ua);
      unit->add_option("-o,--output", *unit_out, "The .cu file")->required();
      unit->add_option("--target", *unit_target, "A GPU target (weft targets)")
          ->capture_default_str();
      unit->add_flag("--decode-loop", *unit_decode,
                     "With the decode loop's tasks (a decode-step program, as `weft mpk run` "
                     "builds it)");
      unit->add_option("--schedulers", *unit_schedulers, "Scheduler warps")->capture_default_str();
      return [=]() -> int {
        if (decoder->parsed()) return run_decoder(*dec);
        if (unit->parsed())
          return write_unit_command(*ua, *unit_target, *unit_decode, *unit_schedulers, *unit_out);
        if (bench->parsed())
          return bench_megakernel_command(*ba, *bench_schedulers, *bench_on == "gpu", *bo);
        if (hop->parsed()) {
          HopBenchOptions o = *ho;
          o.jit = *hop_dispatch == "jit";
          o.emulated = *hop_on != "gpu";
          if (!o.emulated) o.arch = target_for_device(require_cuda_device()).arch;
          if (o.workers == 0) o.workers = static_cast<uint32_t>(default_workers(!o.emulated));
          return bench_hops_command(o);
        }
        if (compile->parsed()) {
          Built built = build(*a, *stop);
          std::filesystem::path dir(*out_dir);
          std::error_code ec;
          std::filesystem::create_directories(dir, ec);
          if (ec) throw UserError(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
          write(dir / (built.stem + ".tgraph"), print_tgraph(built.compiled.graph));
          write(dir / (built.stem + ".tgraph.dot"), tgraph_to_dot(built.compiled.graph));
          if (!built.compiled.blob.empty())
            write(dir / (built.stem + ".mpk"),
                  std::string(built.compiled.blob.begin(), built.compiled.blob.end()));
          print_summary(built);
          fmt::print("  wrote {}/{}.tgraph, .tgraph.dot{}\n", dir.string(), built.stem,
                     built.compiled.blob.empty() ? "" : ", .mpk");
          return 0;
        }
        if (*on != "host") {
          RunArgs r;
          r.tokens = *tokens;
          r.schedulers = *schedulers;
          r.trace_file = *trace_file;
          r.decode.tokens = *tokens;
          r.decode.prompt = *prompt;
          r.decode.seed = *seed;
          r.decode.normal_std = *init_std;
          r.tokens_per_launch = *per_launch;
          r.host_loop = *host_loop;
          r.host_reference = !*no_host_reference;
          r.logits = *logits;
          return run_megakernel(*b, r, *on == "gpu");
        }
        Built built = build(*b);
        print_summary(built);
        auto program = build_cpu_program(built.plan, generate_source(built.plan, Backend::cpu),
                                         host_build_options());
        DeviceGraph g = decode_task_graph(built.compiled.blob);
        HostRunOptions ro;
        ro.schedulers = *schedulers;
        ro.delay_seed = *delay_seed;
        ro.trace = !trace_file->empty();
        auto write_trace = [&](const std::vector<TaskSpan>& spans) {
          if (trace_file->empty()) return;
          write(*trace_file, chrome_trace_json(g, spans, built.stem));
          fmt::print("  wrote the trace of {} task runs to {}\n", spans.size(), *trace_file);
        };
        if (built.plan.find_tensor("LOGITS") && built.plan.find_tensor("M")) {
          DecodeOptions d;
          d.tokens = *tokens;
          d.prompt = *prompt;
          d.seed = *seed;
          d.normal_std = *init_std;
          d.declared = built.declared;
          DecodeResult want = decode_sequential(built.plan, *program, d);
          d.keep_weights = !dump->empty();
          DecodeResult got = decode_on_host(built.plan, *program, g, d, ro);
          if (!got.run.ok) throw UserError(got.run.report);
          write_trace(got.run.trace);
          fmt::print("  tokens (task graph): {}\n", fmt::join(got.tokens, " "));
          fmt::print("  tokens (sequential): {}\n", fmt::join(want.tokens, " "));
          fmt::print("  {} tokens: task graph {:.3f} ms, sequential kernels {:.3f} ms\n", *tokens,
                     got.run.seconds * 1e3, want.run.seconds * 1e3);
          const bool same = got.tokens == want.tokens && got.logits == want.logits;
          fmt::print("  {}\n", same ? "identical tokens and logits" : "MISMATCH");
          if (!dump->empty()) {
            write_dump(*dump, d, got);
            fmt::print("  wrote {}/weights.npz, decode.npz\n", *dump);
          }
          return same ? 0 : 3;
        }
        HostTensors want(built.plan), got(built.plan);
        std::mt19937_64 rng(1);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (size_t i = 0; i < want.inputs.size(); ++i)
          for (size_t j = 0; j < want.inputs[i].size(); ++j)
            got.inputs[i][j] = want.inputs[i][j] = u(rng);
        run_sequential(*program, want, static_cast<uint64_t>(*tokens));
        ro.iterations = static_cast<uint64_t>(*tokens);
        HostRunResult r = run_on_host(built.plan, *program, g, got, ro);
        if (!r.ok) throw UserError(r.report);
        write_trace(r.trace);
        const bool same = got.outputs == want.outputs;
        fmt::print("  {} iterations in {:.3f} ms: outputs {}\n", *tokens, r.seconds * 1e3,
                   same ? "identical to sequential execution" : "DIFFER from sequential execution");
        return same ? 0 : 3;
      };
    });

}  // namespace weft::cli
