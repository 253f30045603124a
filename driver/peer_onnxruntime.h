// onnxruntime as a peer: the same ONNX model timed by onnxruntime's CPU provider on the same
// inputs, in a Python that has it (WEFT_PYTHON, else python3), so `weft bench DIR --peer
// onnxruntime` prints both in one run. onnxruntime is never a dependency of weft: without it the
// peer is a UserError that says how to install it.
#pragma once

#include <string>

#include "runtime/timing.h"

namespace weft {

struct PeerTiming {
  Timing timing;
  std::string version;  // onnxruntime's
  int threads = 1;      // its intra-op threads
};

// Times `model` (an .onnx file) on the arrays of `inputs_npz` by graph input name (cast to the
// types the graph declares): `warmup` untimed runs, then the median of `reps`.
PeerTiming time_onnxruntime(const std::string& model, const std::string& inputs_npz, int warmup,
                            int reps, int threads);

}  // namespace weft
