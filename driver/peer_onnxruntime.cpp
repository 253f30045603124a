// onnxruntime timed from a Python script weft writes to a temporary file and runs.
#include "driver/peer_onnxruntime.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/run_command.h"

namespace weft {
namespace {

// argv: model, inputs, warmup, reps, threads. Prints one JSON object: the times, or "error".
constexpr const char* kScript = R"PY(
import json, statistics, sys, time
try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:
    print(json.dumps({"error": f"{e.name or e}: not installed for {sys.executable} "
                               "(pip install onnxruntime numpy, or set WEFT_PYTHON to a Python "
                               "that has them)"}))
    sys.exit(0)
model, inputs = sys.argv[1], sys.argv[2]
warmup, reps, threads = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
options = ort.SessionOptions()
options.intra_op_num_threads = threads
options.inter_op_num_threads = 1
try:
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
except Exception as e:
    print(json.dumps({"error": f"onnxruntime cannot load the model: {e}"}))
    sys.exit(0)
types = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
         "tensor(bool)": np.bool_, "tensor(float16)": np.float16, "tensor(double)": np.float64}
feeds = {}
with np.load(inputs) as z:
    for i in session.get_inputs():
        if i.name not in z.files:
            print(json.dumps({"error": f"{inputs} has no array '{i.name}' for the model input"}))
            sys.exit(0)
        feeds[i.name] = z[i.name].astype(types.get(i.type, np.float32))
for _ in range(warmup):
    session.run(None, feeds)
times = []
for _ in range(reps):
    start = time.perf_counter()
    session.run(None, feeds)
    times.append(time.perf_counter() - start)
print(json.dumps({"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
                  "version": ort.__version__}))
)PY";

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

PeerTiming time_onnxruntime(const std::string& model, const std::string& inputs_npz, int warmup,
                            int reps, int threads) {
  namespace fs = std::filesystem;
  if (reps < 1) throw UserError("the onnxruntime peer needs at least one timed run");
  const char* env = std::getenv("WEFT_PYTHON");
  const std::string python = env && *env ? env : "python3";
  fs::path script = fs::temp_directory_path() / fmt::format("weft_peer_ort_{}.py", getpid());
  std::ofstream(script) << kScript;
  std::string cmd = fmt::format("{} {} {} {} {} {} {}", quoted(python), quoted(script.string()),
                                quoted(model), quoted(inputs_npz), warmup, reps, threads);
  std::string out;
  const int status = run_command(cmd, out);
  std::error_code ec;
  fs::remove(script, ec);
  // The result is the last line; anything before it (warnings) is onnxruntime's.
  std::string last = out.substr(0, out.find_last_not_of("\n") + 1);
  last = last.substr(last.find_last_of('\n') + 1);
  nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
  if (status != 0 || j.is_discarded() || !j.is_object())
    throw UserError(fmt::format("the onnxruntime peer ({}) failed:\n{}", python, out));
  if (j.contains("error"))
    throw UserError(SourceLoc{model},
                    fmt::format("onnxruntime peer: {}", j["error"].get<std::string>()));
  PeerTiming t;
  t.timing.median_s = j.at("median_s").get<double>();
  t.timing.min_s = j.at("min_s").get<double>();
  t.timing.max_s = j.at("max_s").get<double>();
  t.timing.reps = reps;
  t.version = j.at("version").get<std::string>();
  t.threads = threads;
  return t;
}

}  // namespace weft
