// `weft bench FILE --backend cpu|cuda|cuda-emulation [--compare INPUT_PROGRAM] [--check] [--json]`:
// median run time of a µGraph compiled by a backend, its speedup over another program (the unfused
// input) run by the same backend, and (--check) whether its outputs match the reference
// interpreter. On the GPU, each run is timed with CUDA events on device-resident buffers. The work
// is driver/measure.h's. `weft bench DIR --inputs IN.npz [--inputs ...] [--function F]
// [--backend cuda|cuda-emulation [--megakernel]] [--peer onnxruntime]` times a compiled model
// against the uncompiled one (driver/compiled_dir.h), with a backend also both device-resident
// (and as one persistent kernel, driver/model_megakernel.h), and with a peer the same ONNX model
// in onnxruntime (driver/peer_onnxruntime.h).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "core/parallel.h"
#include "core/target.h"
#include "cpulib/cpu_library.h"
#include "driver/compiled_dir.h"
#include "driver/measure.h"
#include "driver/model_megakernel.h"
#include "driver/peer_onnxruntime.h"
#include "onnx/import.h"
#include "tools/weft/command.h"
#include "tools/weft/thread_flags.h"

namespace weft::cli {
namespace {

std::string ms(double s) {
  return fmt::format("{:.3f} ms", s * 1e3);
}

std::string us(double s) {
  return fmt::format("{:.2f} us", s * 1e6);
}

// `weft bench DIR`: per input, the three VMs' medians and the compiled outputs' agreement; with
// a device, the compiled module and the per-operator baseline device-resident.
// --megakernel: the function at the input's binding as one persistent kernel, timed beside the
// device-resident run (`compiled`: its median).
void bench_megakernel(const std::string& dir, const std::string& function, const std::string& in,
                      Backend device, int workers, int warmup, int reps, double compiled) {
  CompiledModelDir d(dir);
  const std::vector<VmValue> args = d.arguments(function, read_npz(in), in);
  ModelMegakernelOptions o;
  o.function = function;
  o.platform = device == Backend::cuda ? MpkPlatform::gpu : MpkPlatform::emulation;
  o.workers = workers;
  const ModelMegakernel m = model_megakernel(d, args, o);
  const ModelMegakernelTiming t = time_model_megakernel(m, args, warmup, reps);
  fmt::print(
      "    one persistent kernel ({} plan kernels, {} tasks, {} workers{})  {:10.3f} ms  ({:.2f}x "
      "over the compiled module's kernels; outputs {} its kernels run one by one)\n",
      m.program.plan.kernels.size(), t.tasks, t.workers, m.stored ? ", the plan DIR stored" : "",
      t.timing.median_s * 1e3, compiled / t.timing.median_s, t.same ? "equal to" : "DIFFER from");
  if (!t.same)
    throw UserError(
        fmt::format("{}: the persistent kernel's outputs differ from its "
                    "kernels run one by one (a bug: please report it)",
                    dir));
}

int bench_compiled_model(const std::string& dir, const std::vector<std::string>& inputs,
                         const std::string& function, int warmup, int reps,
                         std::optional<Backend> device, const std::string& peer, int peer_threads,
                         int threads, bool megakernel, int workers) {
  CompiledModelBench bench(dir, function, warmup, reps, device);
  const std::string library = cpu_library_name();
  fmt::print(
      "{}: CPU wall time of `{}` through the VM (median of {} after {} warm-up; {} thread{}; {})\n",
      dir, function, reps, warmup, threads, threads == 1 ? "" : "s",
      library.empty() ? "convolution and matmul on weft's own code"
                      : "convolution and matmul by " + library);
  std::string peer_model;
  if (!peer.empty()) {
    peer_model = CompiledModelDir(dir).model_file();
    if (!is_onnx_path(peer_model) || !std::filesystem::exists(peer_model))
      throw UserError(SourceLoc{dir},
                      fmt::format("--peer onnxruntime times the .onnx file the directory was "
                                  "compiled from; its summary names '{}', {}",
                                  peer_model,
                                  is_onnx_path(peer_model) ? "which is not there (run from the "
                                                             "directory `weft compile` ran in)"
                                                           : "not an ONNX model"));
  }
  int rc = 0;
  for (const std::string& in : inputs) {
    ModelBenchResult r = bench.time(read_npz(in), in);
    if (!r.outputs_match) rc = 3;
    fmt::print(
        "{} ({}{}):\n", in, binding_str(r.binding),
        r.compiled_binding ? "" : "; not a compiled binding: every variant runs the original body");
    fmt::print("  uncompiled, per-operator interpreter   {:10.3f} ms\n",
               r.interpreter.median_s * 1e3);
    fmt::print("  uncompiled, per-operator CPU kernels   {:10.3f} ms\n",
               r.per_operator.median_s * 1e3);
    fmt::print(
        "  compiled (superoptimized regions)      {:10.3f} ms  ({:.2f}x over per-operator "
        "CPU kernels)\n",
        r.compiled.median_s * 1e3, r.per_operator.median_s / r.compiled.median_s);
    fmt::print("  outputs vs the uncompiled module: scaled error {:.3g} ({})\n", r.scaled_error,
               r.scaled_error <= 1e-4 ? "within 1e-4" : "DIFFER");
    if (!peer_model.empty()) {
      PeerTiming p = time_onnxruntime(peer_model, in, warmup, reps, peer_threads);
      fmt::print(
          "  peer: onnxruntime {} (CPU, {} thread{})  {:10.3f} ms  (weft compiled takes {:.2f}x "
          "its time)\n",
          p.version, p.threads, p.threads == 1 ? "" : "s", p.timing.median_s * 1e3,
          r.compiled.median_s / p.timing.median_s);
    }
    if (!device) continue;
    const DeviceTiming &dc = *r.device_compiled, &dp = *r.device_per_operator;
    fmt::print("  device-resident on {} ({}):\n", backend_name(*device),
               dc.device_clock ? "measured on the GPU with CUDA events"
                               : "emulation: host wall time of the CUDA code run on the host, "
                                 "not GPU times");
    auto how = [](const DeviceTiming& t) {
      return t.graph_replays ? "CUDA-graph replay" : "whole runs, kernel by kernel";
    };
    fmt::print("    uncompiled, per-operator kernels     {:10.3f} ms  ({})\n",
               dp.timing.median_s * 1e3, how(dp));
    fmt::print(
        "    compiled (superoptimized regions)    {:10.3f} ms  ({}; {:.2f}x over "
        "per-operator kernels)\n",
        dc.timing.median_s * 1e3, how(dc), dp.timing.median_s / dc.timing.median_s);
    const DeviceVmStats& s = r.device_stats;
    fmt::print(
        "    compiled module's executor: {} kernel launches, {} µGraph launches, {} host "
        "fallbacks over {} runs, "
        "{} graph replays\n",
        s.kernel_launches, s.ugraph_launches, s.host_fallbacks, s.runs, s.graph_replays);
    fmt::print("    outputs vs the uncompiled module: scaled error {:.3g} ({})\n",
               r.device_scaled_error, r.device_scaled_error <= 1e-4 ? "within 1e-4" : "DIFFER");
    if (megakernel)
      bench_megakernel(dir, function, in, *device, workers, warmup, reps, dc.timing.median_s);
  }
  return rc;
}

}  // namespace

static Register reg(
    "bench", "Time a µGraph compiled by a backend (median of repetitions)", [](CLI::App& sub) {
      auto file = std::make_shared<std::string>();
      auto backend = std::make_shared<std::string>("cpu");
      auto target = std::make_shared<std::string>();
      auto compare = std::make_shared<std::string>();
      auto warmup = std::make_shared<int>(-1);
      auto reps = std::make_shared<int>(-1);
      auto seed = std::make_shared<uint64_t>(0);
      auto json = std::make_shared<bool>(false);
      auto check = std::make_shared<bool>(false);
      auto inputs = std::make_shared<std::vector<std::string>>();
      auto function = std::make_shared<std::string>("main");
      sub.add_option("FILE", *file, "µGraph file, or a directory `weft compile MODEL` wrote")
          ->required();
      sub.add_option("--inputs", *inputs,
                     "Compiled models: arguments (.npz) at a compiled binding (repeatable)");
      sub.add_option("--function", *function, "Compiled models: the function to time")
          ->capture_default_str();
      sub.add_option("--backend", *backend,
                     "cpu, cuda (the GPU, timed with CUDA events), or cuda-emulation (the CUDA "
                     "code on the host: for --check, its times are not the GPU's)")
          ->check(CLI::IsMember({"cpu", "cuda", "cuda-emulation"}))
          ->capture_default_str();
      sub.add_option("--target", *target,
                     fmt::format("GPU target to lower for with --backend cuda (default: the "
                                 "device's) or cuda-emulation (default: {})",
                                 weft::kDefaultTargetName));
      sub.add_option("--compare", *compare,
                     "Another program with the same inputs and outputs (e.g. the unfused input "
                     "program): timed by the same backend, outputs checked to agree");
      sub.add_option("--warmup", *warmup,
                     "Untimed runs first (default: cpu 3, cuda 10, cuda-emulation 0)");
      sub.add_option("--reps", *reps,
                     "Timed runs, the median is reported (default: cpu 21, cuda 100, "
                     "cuda-emulation 1)");
      sub.add_option("--seed", *seed, "Seed of the random inputs")->capture_default_str();
      sub.add_flag("--json", *json, "Print the result as JSON (times in microseconds)");
      auto peer = std::make_shared<std::string>();
      auto peer_threads = std::make_shared<int>(0);
      sub.add_option("--peer", *peer,
                     "Compiled ONNX models: also time this peer on the same inputs (onnxruntime, "
                     "from WEFT_PYTHON or python3)")
          ->check(CLI::IsMember({"onnxruntime"}));
      sub.add_option("--peer-threads", *peer_threads,
                     "the peer's threads (0: as many as weft's: --threads, else the cores)")
          ->capture_default_str();
      auto threads = std::make_shared<int>(0);
      cli::add_threads_option(sub, *threads);
      auto megakernel = std::make_shared<bool>(false);
      auto workers = std::make_shared<int>(0);
      sub.add_flag("--megakernel", *megakernel,
                   "Compiled models, with --backend cuda or cuda-emulation: also the function as "
                   "one persistent kernel (the plan DIR stored for the binding, or a trace)");
      sub.add_option("--workers", *workers,
                     "With --megakernel: worker CTAs (default: the SMs but one on a GPU, 4 in "
                     "emulation)");
      sub.add_flag("--check", *check,
                   "Also compare FILE's outputs with the reference interpreter (f64, same inputs) "
                   "within the output dtype's tolerance (exit 3 when outside)");
      return [=]() -> int {
        if (is_compiled_model_dir(*file)) {
          if (inputs->empty()) throw UserError("a compiled model is timed on --inputs IN.npz");
          if (*megakernel && *backend == "cpu")
            throw UserError(
                "--megakernel times the persistent kernel beside the device-resident "
                "run: give --backend cuda or cuda-emulation");
          // --backend cpu (the default) times the host VMs only; cuda and cuda-emulation add
          // the device-resident executor.
          std::optional<Backend> device;
          if (*backend != "cpu") device = *backend_by_name(*backend);
          const cli::ThreadCap cap(*threads);
          const int weft_threads = cap.threads();
          return bench_compiled_model(*file, *inputs, *function, *warmup < 0 ? 1 : *warmup,
                                      *reps < 0 ? 5 : *reps, device, *peer,
                                      *peer_threads > 0 ? *peer_threads : weft_threads,
                                      weft_threads, *megakernel, *workers);
        }
        MeasureOptions options;
        options.backend = *backend_by_name(*backend);
        options.target = *target;
        options.seed = *seed;
        options.warmup = *warmup;
        options.reps = *reps;
        bool cuda = options.backend == Backend::cuda;
        if (*reps == 0) throw UserError("--reps must be at least 1");
        if (!target->empty() && backend_target_kind(options.backend) != TargetKind::gpu)
          throw UserError("--target chooses the GPU of --backend cuda; the CPU backend has one");
        MeasureSetup setup = prepare_measurement(options);
        auto report = [&](const std::string& path, const Timing& t) {
          if (*json) return;
          std::string label = options.backend == Backend::cpu
                                  ? *backend
                                  : fmt::format("{} {}", *backend, setup.target->name);
          auto fmt_time = cuda ? us : ms;
          fmt::print("{} [{}]: median {} (min {}, max {}, {} reps after {} warm-up)\n", path, label,
                     fmt_time(t.median_s), fmt_time(t.min_s), fmt_time(t.max_s), t.reps,
                     setup.warmup);
        };
        Graph g = load_graph(*file);
        Measurement a = measure_graph(g, setup);
        report(*file, a.timing);
        BenchReport out{setup, {*file, g.name, a.timing}, {}, {}, {}};
        int rc = 0;
        if (*check) {
          out.check = check_against_interpreter(g, a, setup);
          if (!*json)
            fmt::print(
                "{} vs the reference interpreter: {} (scaled error {:.3g}, tolerance {:.3g})\n",
                *file, out.check->matches ? "matches" : "DIFFERS", out.check->scaled_error,
                out.check->tolerance);
          if (!out.check->matches) rc = 3;
        }
        if (!compare->empty()) {
          Graph ref = load_graph(*compare);
          Measurement b = measure_graph(ref, setup);
          report(*compare, b.timing);
          out.agreement = compare_measurements(g, *file, a, *compare, b, setup);
          out.compare = TimedProgram{*compare, ref.name, b.timing};
          if (!*json)
            fmt::print("speedup of {} over {}: {:.2f}x (outputs {})\n", *file, *compare,
                       out.agreement->speedup,
                       out.agreement->outputs_agree ? "agree within tolerance" : "DIFFER");
          if (!out.agreement->outputs_agree) rc = 3;
        }
        if (*json) std::cout << bench_json(out).dump(2) << "\n";
        return rc;
      };
    });

}  // namespace weft::cli
