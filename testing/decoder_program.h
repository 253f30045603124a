// Qwen3-shaped decode-step programs: one decode step of a decoder-only transformer written as
// .weft text (graph-defined kernels for the fused RMSNorm + projections and for attention over the
// KV cache, library operators elsewhere) that declares its decode interface
// (mpk/decode_interface.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace weft {

struct DecoderConfig {
  std::string name;  // the program's name
  int64_t hidden = 0, layers = 0, q_heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  int64_t cache = 0;          // KV-cache positions T (the most tokens one decode can take)
  double rope_theta = 1e6;    // for the host hooks (COS/SIN); recorded in the header comment
  std::string eps = "1e-6";   // RMSNorm epsilon, a rational as the text form writes it
  DType dtype = DType::bf16;  // every tensor (weft operators take operands of one dtype)
  // Kernel shapes: output columns per block of a projection kernel, reduction rows per loop
  // iteration, attention blocks per KV head along the cache (split-KV) and cache positions per
  // attention loop iteration.
  int64_t tile = 32, k_chunk = 128, kv_splits = 2, cache_chunk = 16;
};

// The presets: "qwen3-tiny" (hidden 256, 2 layers, 4 query / 2 KV heads of 64, FFN 768,
// vocabulary 4096, 64 positions) and "qwen3-0.6b" (Qwen3-0.6B's shapes: hidden 1024, 28 layers,
// 16 / 8 heads of 128, FFN 3072, vocabulary 151,936, 512 positions). UserError for another name.
DecoderConfig decoder_config(const std::string& preset);
const std::vector<std::string>& decoder_presets();

// The program's text. UserError when a dimension does not divide as the kernels need (the message
// names it).
std::string decoder_program(const DecoderConfig& config);

// Weight bytes one step reads at the config's dtype (every input but X, M, COS, SIN and the
// caches; the tied embedding once).
int64_t decoder_weight_bytes(const DecoderConfig& config);

}  // namespace weft
