// The decode loop's host work between steps: the step's inputs before it, the KV-cache append,
// the logits and the greedy argmax after it; the same hooks drive every host loop.
#include "testing/decode_demo.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace weft {

namespace {

class DecodeSession {
 public:
  DecodeSession(const ProgramPlan& plan, const DecodeOptions& o) : start_(decode_start(plan, o)) {
    result.tokens = start_.tokens;
    result.weights = std::move(start_.weights);
  }

  void before(HostTensors& t, uint64_t k) {
    if (k == 1) {
      // Copied, not swapped: the tensor table points into t.inputs. Freed: a 0.6B-sized
      // program's weights are gigabytes.
      for (size_t i = 0; i < t.inputs.size(); ++i) {
        std::copy(start_.inputs[i].begin(), start_.inputs[i].end(), t.inputs[i].begin());
        std::vector<float>().swap(start_.inputs[i]);
      }
    }
    const int64_t pos = static_cast<int64_t>(k) - 1;  // cache positions [0, pos) are filled
    start_.write_step_inputs(pos, result.tokens[static_cast<size_t>(pos)], t.inputs);
  }

  void after(HostTensors& t, uint64_t k) {
    const DecodeInterface& i = start_.interface;
    const int64_t pos = static_cast<int64_t>(k) - 1, ctx = i.ctx;
    for (const DecodeLayer& y : i.layers) {
      const int64_t heads = y.heads, dh = y.head_dim;
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t j = 0; j < dh; ++j) {
          t.inputs[y.kc][(h * dh + j) * ctx + pos] = t.outputs[y.kn][h * dh + j];
          t.inputs[y.vc][(h * ctx + pos) * dh + j] = t.outputs[y.vn][h * dh + j];
        }
    }
    const auto& lg = t.outputs[i.logits];
    result.logits.push_back(lg);
    // Within the prompt the next token is given; after it, the greedy choice.
    if (result.tokens.size() == static_cast<size_t>(k))
      result.tokens.push_back(
          static_cast<int>(std::max_element(lg.begin(), lg.end()) - lg.begin()));
  }

  DecodeResult result;

 private:
  DecodeStart start_;
};

}  // namespace

DecodeResult decode_on_host(const ProgramPlan& plan, const CpuProgram& program,
                            const DeviceGraph& graph, const DecodeOptions& options,
                            HostRunOptions run_options) {
  DecodeSession s(plan, options);
  HostTensors t(plan);
  run_options.iterations = static_cast<uint64_t>(options.tokens);
  s.result.run = run_on_host(
      plan, program, graph, t, run_options, [&](uint64_t k) { s.before(t, k); },
      [&](uint64_t k) { s.after(t, k); });
  return std::move(s.result);
}

DecodeResult decode_sequential(const ProgramPlan& plan, const CpuProgram& program,
                               const DecodeOptions& options) {
  DecodeSession s(plan, options);
  HostTensors t(plan);
  const auto start = std::chrono::steady_clock::now();
  run_sequential(
      program, t, static_cast<uint64_t>(options.tokens), [&](uint64_t k) { s.before(t, k); },
      [&](uint64_t k) { s.after(t, k); });
  s.result.run.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::move(s.result);
}

DecodeResult decode_with(const ProgramPlan& plan, const DecodeOptions& options,
                         const DecodeStep& step) {
  DecodeSession s(plan, options);
  HostTensors t(plan);
  double seconds = 0;
  for (uint64_t k = 1; k <= static_cast<uint64_t>(options.tokens); ++k) {
    s.before(t, k);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::vector<float>> outs = step(t.inputs);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    WEFT_CHECK(outs.size() == t.outputs.size(), "a decode step returned {} outputs, not {}",
               outs.size(), t.outputs.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      WEFT_CHECK(outs[i].size() == t.outputs[i].size(), "decode step output {} has {} values", i,
                 outs[i].size());
      std::copy(outs[i].begin(), outs[i].end(), t.outputs[i].begin());
    }
    s.after(t, k);
  }
  s.result.run.seconds = seconds;
  return std::move(s.result);
}

}  // namespace weft
