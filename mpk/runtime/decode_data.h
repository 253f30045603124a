// What a decode of a decode-step program (mpk/decode_interface.h) starts from and gives back: its
// options (tokens, prompt, seeded weights), the first step's inputs with the weights drawn from
// the seed, and its result (tokens, per-step logits). The device decode loops
// (MegakernelProgram::decode, PerKernelDecoder) and the host loops of testing/decode_demo.h start
// from the same bytes, so they decode the same tokens.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "lower/plan.h"
#include "mpk/decode_interface.h"
#include "mpk/runtime/host_runtime.h"

namespace weft {

enum class WeightInit {
  automatic,  // normal when the program has an embedding_table (Qwen3-shaped), else uniform
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
  // With keep_weights: every weight input as filled, and "embedding" [V, D] for a table the loop
  // holds.
  std::vector<NamedValues> weights;
};

// Where a decode starts: the first step's inputs (weights seeded and rounded as above, caches and
// mask zero, the token's embedding and rotary tables of the first token), the embedding table
// [V, D] the loop holds (empty with embedding_table), the tokens fed first (the prompt, or the
// first token) and the rotary inverse frequencies theta^(-2i/dh), i < dh/2, in double (empty
// without rotary tables).
struct DecodeStart {
  DecodeInterface interface;
  std::vector<std::vector<float>> inputs;  // plan input order
  std::vector<float> embedding;
  std::vector<int> tokens;
  std::vector<double> inv_freq;
  std::vector<NamedValues> weights;  // with DecodeOptions::keep_weights

  // The host's work before the step at cache position `pos` feeding `token`: the mask (positions
  // [0, pos) filled), the token's embedding and the rotary tables of `pos`, into `inputs`.
  void write_step_inputs(int64_t pos, int token, std::vector<std::vector<float>>& inputs) const;
};

// UserError when the plan declares no decode interface or does not fit it, for a token count
// outside [1, T] or a fed token outside the vocabulary.
DecodeStart decode_start(const ProgramPlan& plan, const DecodeOptions& options);

}  // namespace weft
