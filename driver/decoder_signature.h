// Driver: what makes a compiled model's function a decode step with its KV cache, as Hugging Face
// exporters (transformers' ONNX export, Optimum) write decoders "with past": token ids, an
// attention mask over the cache and the new tokens, their positions, and each cache tensor as an
// input `past_key_values.L.key|value` paired with an output `present.L.key|value` that holds the
// cache with the new tokens' entries appended along one axis.
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

struct DecoderSignature {
  std::string input_ids;       // [batch, seq] token ids
  std::string attention_mask;  // [batch, cache + seq]: 1 where a position is attended to
  std::string position_ids;    // [batch, seq]
  std::string logits;          // [batch, seq, vocab]
  std::vector<DecoderCache> caches;
  // Rows decoded at once: 1 for a symbolic batch; a fixed-shape export's batch (every row decodes
  // the same prompt).
  int64_t batch = 1;
  std::optional<int64_t> vocab;  // the logits' last dim, when static
  // A fixed-shape export's cache length and new tokens per step; nullopt when symbolic.
  std::optional<int64_t> fixed_cache, fixed_seq;
};

// The roles of `function`'s parameters and results by the exporters' names. UserError naming
// what is missing or unexpected (an input other than the roles and weights, a past without its
// present, caches of different shapes, no position_ids: positions are given, not derived from the
// cache's length, since weft's caches may hold masked slots).
DecoderSignature decoder_signature(const CompiledModelDir& dir, const std::string& function);

}  // namespace weft
