// Driver: measuring a µGraph compiled by a backend (median of repetitions) and checking its
// outputs against the reference interpreter or another program, as library calls with structured
// results; bench_json is the JSON form `weft bench --json` prints.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/target.h"
#include "driver/run.h"
#include "ir/graph.h"
#include "runtime/program.h"
#include "runtime/timing.h"

namespace weft {

struct MeasureOptions {
  Backend backend = Backend::cpu;
  std::string target;  // as RunOptions::target
  uint64_t seed = 0;   // of the random inputs (interp/random_inputs.h)
  int warmup = -1;     // untimed runs first; -1: default_repetitions(backend)
  int reps = -1;       // timed runs, the median is reported; -1: default_repetitions(backend)
  BuildOptions build;
  ProgressFn progress;
};

// Untimed and timed runs when none are asked for: cpu 3 / 21, cuda 10 / 100, cuda-emulation 0 / 1
// (its times measure the host, not a GPU).
struct Repetitions {
  int warmup = 0, reps = 1;
};
Repetitions default_repetitions(Backend backend);

// A measurement session with everything resolved once.
struct MeasureSetup {
  Backend backend = Backend::cpu;
  const Target* target = nullptr;
  std::string device;  // "host CPU", the GPU's name, or "host CPU (CUDA emulation)"
  uint64_t seed = 0;
  int warmup = 0, reps = 1;
  BuildOptions build;
  ProgressFn progress;
};

// Resolves the target and device (cuda: throws UserError when there is no device, before anything
// is compiled) and the repetition counts (UserError when reps < 1 or warmup < 0).
MeasureSetup prepare_measurement(const MeasureOptions& options);

struct Measurement {
  Timing timing;
  std::vector<std::vector<float>> outputs;  // of a run on the seeded inputs, in output order
};

// Compiles `graph` for the setup's target and backend, runs it once on the seeded inputs (the
// outputs) and times it (Program::time).
Measurement measure_graph(const Graph& graph, const MeasureSetup& setup);

struct InterpreterCheck {
  bool matches = false;     // every output within its tolerance
  double scaled_error = 0;  // the worst output's (NaN when any output has a NaN)
  double tolerance = 0;     // the largest output tolerance
};

// The measured outputs against the reference interpreter (f64) on the same inputs. GPU backends
// store inputs in their declared dtypes, so the interpreter sees them rounded the same way and
// each output's tolerance is its dtype's; the cpu backend computes in f32 on the unrounded inputs
// (f32 tolerance).
InterpreterCheck check_against_interpreter(const Graph& graph, const Measurement& measured,
                                           const MeasureSetup& setup);

struct Agreement {
  bool outputs_agree = false;  // every output of one within the tolerance of the other's
  double speedup = 0;          // the reference's median time over the program's
};

// Compares the measurements of `program` and `reference` (another program with the same inputs
// and outputs, e.g. the unfused input program). Throws UserError when their outputs differ in
// number or size.
Agreement compare_measurements(const Graph& program, const std::string& program_path,
                               const Measurement& measured, const std::string& reference_path,
                               const Measurement& reference, const MeasureSetup& setup);

struct TimedProgram {
  std::string file;     // as given
  std::string program;  // the µGraph's name
  Timing timing;
};

struct BenchReport {
  MeasureSetup setup;
  TimedProgram program;
  std::optional<InterpreterCheck> check;
  std::optional<TimedProgram> compare;
  std::optional<Agreement> agreement;  // with `compare`
};

// {backend, target, device, seed, warmup, reps, program: {file, program, median_us, min_us,
// max_us}, check: {matches_interpreter, scaled_error, tolerance}, compare: {...}, speedup,
// outputs_agree}: times in microseconds rounded to ns, speedup to 3 decimals; absent parts left
// out.
nlohmann::ordered_json bench_json(const BenchReport& report);

}  // namespace weft
