// What makes a program a decode step: the interface it declares, `interface decode(...)` in its
// text (ir/interface.h), resolved against its plan. Nothing is recognized by tensor names.
//
// Roles (docs/mpk.md, "The decode interface"):
//   token_embedding=X     input [1, D]: the current token's embedding
//   mask=M                input [1, 1, T]: 1 where the KV cache holds a position
//   logits=L              output of V values
//   k_cache=[K0, ...]     inputs [Hkv, dh, T], one per layer
//   v_cache=[V0, ...]     inputs [Hkv, T, dh], one per layer
//   new_k=[KN0, ...]      outputs of Hkv dh values: the token's key (after any rotary embedding)
//   new_v=[VN0, ...]      outputs of Hkv dh values: its value
// and optionally
//   rope_cos=C, rope_sin=S   inputs of dh values: the rotary tables of the step's position p
//                            (entries i and i + dh/2 are cos/sin(p theta^(-2i/dh)), rotate-half)
//   embedding_table=E        input [D, V]: the embedding table transposed (also the tied LM
//                            head; X is its column of the token); without it the table [V, D] is
//                            held by the decode loop.
// Every other input is a weight.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/interface.h"
#include "lower/plan.h"

namespace weft {

inline constexpr const char* kDecodeInterface = "decode";

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
  int64_t rope_dim = 0;  // the rotary tables' values (the head size); 0 without them
  std::vector<DecodeLayer> layers;

  // Whether plan input `input` is decode state the loop rewrites each step (the token's
  // embedding, the mask, the rotary tables, the caches) rather than a weight.
  bool is_state_input(size_t input) const;
};

// Whether the plan's program declares `interface decode`.
bool declares_decode_interface(const ProgramPlan& plan);

// UserError when the program declares no decode interface (saying how to declare one), or when
// the declaration does not fit the plan (naming the role and the tensor).
DecodeInterface decode_interface(const ProgramPlan& plan);

// The KV caches the declared interface names (k_cache and v_cache): a decode step's attention
// kernels, the ones that read them, are its data-dependent kernels. UserError as decode_interface.
std::set<std::string> decode_cache_tensors(const ProgramPlan& plan);

// `plan` with `decode` as its decode interface (replacing a declared one): an interface the
// caller passes rather than the program declares. UserError as for decode_interface.
ProgramPlan with_decode_interface(ProgramPlan plan, const ProgramInterface& decode);

}  // namespace weft
