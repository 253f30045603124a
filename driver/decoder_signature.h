// Driver: what makes a compiled model's function a decode step with its KV cache. As Hugging Face
// exporters (transformers' ONNX export, Optimum) write decoders "with past": token ids, an
// attention mask over the cache and the new tokens, their positions, and each cache tensor as an
// input `past_key_values.L.key|value` paired with an output `present.L.key|value` that holds the
// cache with the new tokens' entries appended along one axis. Or as a .wmod declares a step by its
// types: the cache's length an integer parameter `int(p)`, cache parameters with a dim p whose
// results have p + n there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "driver/compiled_dir.h"

namespace weft {

struct DecoderCache {
  std::string past;     // the input
  std::string present;  // the output: past with the new positions appended on the cache axis
  int axis = 0;         // the cache axis
  Shape shape;          // past's shape at the signature's batch, 0 on the cache axis

  // `shape` with `length` positions on the cache axis.
  Shape shape_of(int64_t length) const;
};

// How a decoder takes its cache: `masked` (Hugging Face exports): an attention mask over cache
// and new positions and the positions as a tensor, so a cache may hold masked slots and keep one
// capacity; `positional` (a .wmod step such as examples/models/tiny_llama.wmod's `decode`): the
// cache's length as an integer parameter that also gives the positions, no mask, so the cache
// grows a position a step and a separate function runs the prompt.
enum class DecoderKind : uint8_t { masked, positional };

struct DecoderSignature {
  DecoderKind kind = DecoderKind::masked;
  std::string input_ids;       // [batch, seq] token ids (positional: the first rank-2 tensor)
  std::string attention_mask;  // masked: [batch, cache + seq], 1 where a position is attended to
  std::string position_ids;    // masked: [batch, seq]; positional: the integer parameter
  std::string logits;          // [batch, seq, vocab] (positional: the first result)
  std::vector<DecoderCache> caches;
  // Positional: the function that runs the prompt (the step's parameters without the caches; its
  // results the logits and the caches, in the step's order).
  std::string prefill;
  std::vector<std::string> prefill_results;  // its results' names, in order
  // The caller's other inputs (weights of a .wmod, which its directory does not hold).
  std::vector<std::string> weights;
  // Rows decoded at once: 1 for a symbolic batch; a fixed-shape export's batch (every row decodes
  // the same prompt).
  int64_t batch = 1;
  std::optional<int64_t> vocab;  // the logits' last dim, when static
  // A fixed-shape export's cache length and new tokens per step; nullopt when symbolic.
  std::optional<int64_t> fixed_cache, fixed_seq;
};

// The roles of `function`'s parameters and results: by the exporters' names for a masked decoder,
// by their types for a positional one (`prefill`: its prompt function; empty: one named
// "prefill"). UserError naming what is missing or does not fit (a past without its present, no
// position_ids for a masked decoder: positions are given, not derived from the cache's length,
// since weft's caches may hold masked slots; a positional decoder without a prompt function).
DecoderSignature decoder_signature(const CompiledModelDir& dir, const std::string& function,
                                   const std::string& prefill = "");

}  // namespace weft
