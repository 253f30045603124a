// Driver: greedy decoding with the decoder a user has (a decode step with its KV cache as an
// input/output pair, driver/decoder_signature.h) from a compiled model directory: on the VM with
// a growing cache, on the VM with a cache of fixed capacity, or with each step one launch of the
// step's persistent kernel (driver/model_megakernel.h) whose weights, cache and mask stay where it
// runs (host emulation or the GPU) while only the token, its position, one mask element and the
// logits cross between steps. Structured results; printing is the caller's (`weft decode DIR`,
// the Python binding).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "driver/compiled_dir.h"
#include "driver/mpk_program.h"
#include "exec/npz.h"

namespace weft {

enum class DecodePath : uint8_t { vm, megakernel };

struct ModelDecodeOptions {
  std::string function = "main";
  // A positional decoder's prompt function (driver/decoder_signature.h); empty: "prefill".
  std::string prefill;
  // The step's other inputs by parameter name (a .wmod's weights, which its directory does not
  // hold); UserError names any the step takes and these lack.
  NpzArrays weights;
  int64_t tokens = 16;  // to generate
  DecodePath path = DecodePath::vm;
  // Cache slots of a fixed-capacity decode (a masked decoder): every step sees a past of this
  // length whose slots are masked until filled, the prompt fed a token a step, so one shape (one
  // plan) serves every step. 0: on the VM a growing cache (the prompt in one step, then the past
  // grows a position a step); for the persistent kernel the least that holds the decode (prompt +
  // tokens - 2) or a fixed-shape export's length. A positional decoder's cache always grows: with
  // the persistent kernel each step is traced and built for its own shape.
  int64_t capacity = 0;
  UGraphExecutor executor = UGraphExecutor::cpu;  // vm: as CompiledModelDir::run's
  MpkPlatform platform = MpkPlatform::emulation;  // megakernel: emulation or gpu
  int workers = 0;                                // megakernel: 0 is default_megakernel_workers
  std::function<void(const std::string&)> progress = nullptr;  // a line now and then
};

struct ModelDecodeResult {
  std::vector<int64_t> tokens;       // generated (batch row 0)
  std::vector<double> step_seconds;  // every step's run (a launch, or a VM call) with its copies
  int64_t capacity = 0;              // cache slots; 0: the cache grew
  // Steps at a binding the directory was compiled at (the others ran its per-operator path), and
  // when some were not, a sentence saying how to compile them.
  int64_t compiled_steps = 0;
  std::string note;
  // The persistent kernel: its plan came from DIR/megakernel, the time to trace and build it, the
  // bytes placed once and those copied per step on average (to the device, back to the host).
  bool stored_plan = false;
  double build_seconds = 0;
  int64_t setup_bytes = 0;
  double bytes_to_device_per_step = 0, bytes_to_host_per_step = 0;
};

// Decodes `options.tokens` tokens greedily (the first maximum of the logits, as NumPy's argmax)
// after `prompt`, every batch row on the same prompt. UserError for a function that is not a
// decode step (decoder_signature), an empty prompt or token id outside the vocabulary, a capacity
// that does not hold the decode or lies outside the directory's bounds, or as model_megakernel.
ModelDecodeResult decode_model(CompiledModelDir& dir, const std::vector<int64_t>& prompt,
                               const ModelDecodeOptions& options);

}  // namespace weft
