// Token-by-token decoding of a decode-step program (examples/tiny_decoder_step.weft,
// examples/qwen3_tiny_decode_step.weft) through the host task-graph runtime, or through the
// program's kernels one after another.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lower/plan.h"
#include "mpk/encode.h"
#include "mpk/host_runtime.h"

namespace weft {

// The step program's interface: inputs X [1, D] (the current token's embedding), M [1, 1, T] (1
// where the KV cache holds a position), Kc<l> [Hkv, dh, T] and Vc<l> [Hkv, T, dh] (layer l's cache,
// Hkv KV heads of dh); outputs LOGITS [1, V], KN<l> and VN<l> [1, Hkv dh] (the current token's key,
// after any rotary embedding, and value). Optional inputs: COS and SIN [.., dh] (the rotary tables
// of the step's position p: entry i and i + dh/2 are cos/sin(p theta^(-2i/dh)), the rotate-half
// convention) and EMB [D, V] (the embedding table, transposed: also the tied LM head; X is its
// column of the token). Every other input is a weight, seeded; without EMB the embedding table
// [V, D] is held on the host. Throws UserError when the plan does not follow it.
// Whether a step input is part of the decode state the loop rewrites each step (X, M, COS, SIN
// and the caches Kc*, Vc*) rather than a weight.
bool is_decode_state_input(const std::string& name);

// The interface resolved against a plan: positions in plan.inputs (x, m, emb, cos, sin, each
// layer's kc, vc) and plan.outputs (logits, each layer's kn, vn), and the sizes.
struct DecodeLayer {
  size_t kc = 0, vc = 0, kn = 0, vn = 0;
  int64_t heads = 0, head_dim = 0;
};
struct DecodeInterface {
  size_t x = 0, m = 0, logits = 0;
  std::optional<size_t> emb, cos, sin;
  int64_t dim = 0, ctx = 0, vocab = 0;
  int64_t rope_dim = 0;  // COS's values (the head size); 0 without rotary tables
  std::vector<DecodeLayer> layers;
};
// UserError (naming the tensor) when the plan does not follow the interface.
DecodeInterface decode_interface(const ProgramPlan& plan);

enum class WeightInit {
  automatic,  // normal when the program has EMB (Qwen3-shaped), else uniform
  uniform,    // uniform in [-1, 1] scaled by 1/sqrt(rows): the tiny decoder's
  normal,     // N(0, normal_std); gains (all dims but the last 1) 1 + N(0, normal_std)
};

struct DecodeOptions {
  int tokens = 8;  // decoded tokens (steps), at most T
  int first_token = 1;
  std::vector<int> prompt;  // non-empty: fed at steps 1.. in place of first_token and argmaxes
  uint64_t seed = 1;
  WeightInit init = WeightInit::automatic;
  double normal_std = 0.02;
  double rope_theta = 1e6;
  // Declared dtypes of weights (the CPU plan stores every tensor as f32): each seeded value is
  // rounded to its weight's dtype, so the host computes on what a bf16 device would store.
  std::map<std::string, DType> declared;
  bool keep_weights = false;  // DecodeResult::weights
};

struct NamedValues {
  std::string name;
  Shape shape;
  std::vector<float> values;
};

struct DecodeResult {
  std::vector<int> tokens;  // the prompt (or first token), then one per step after it
  std::vector<std::vector<float>> logits;  // per step
  HostRunResult run;                       // the runtime's (sequential: ok, its time)
  // With keep_weights: every weight input as filled, and "embedding" [V, D] for a host-held table.
  std::vector<NamedValues> weights;
};

// Decodes through the task graph `graph` of `plan`.
DecodeResult decode_on_host(const ProgramPlan& plan, const CpuProgram& program,
                            const DeviceGraph& graph, const DecodeOptions& options,
                            HostRunOptions run_options);
// Decodes running the program's kernels one after another each step.
DecodeResult decode_sequential(const ProgramPlan& plan, const CpuProgram& program,
                               const DecodeOptions& options);

// One decode step: the step program's inputs (plan input order, f32) in, its outputs out.
using DecodeStep =
    std::function<std::vector<std::vector<float>>(const std::vector<std::vector<float>>&)>;
// Decodes calling `step` once per token (a persistent kernel's launch, or the per-kernel path's
// run of a GPU plan), with the same host hooks between steps; run.seconds is the steps' time.
DecodeResult decode_with(const ProgramPlan& plan, const DecodeOptions& options,
                         const DecodeStep& step);

// Where a loop that keeps the decode state on the device starts (mpk/resident_decode.h): the
// first step's inputs as the hooks fill them (weights seeded and rounded as above, caches and mask
// zero, X and COS/SIN of the first token), the host-held embedding table [V, D] (empty with EMB),
// the tokens fed first (the prompt, or the first token) and the rotary inverse frequencies
// theta^(-2i/dh), i < dh/2, in double as the hooks compute them (empty without COS).
struct DecodeStart {
  std::vector<std::vector<float>> inputs;  // plan input order
  std::vector<float> embedding;
  std::vector<int> tokens;
  std::vector<double> inv_freq;
};
DecodeStart decode_start(const ProgramPlan& plan, const DecodeOptions& options);

// Names of the graph-defined kernels that load a tensor whose name starts with `prefix` (the
// attention kernels, reading Kc: the data-dependent operators of a decode step).
std::set<std::string> kernels_reading(const ProgramPlan& plan, const std::string& prefix);

}  // namespace weft
