// `weft mpk decoder -o FILE`: writes a Qwen3-shaped decode-step program
// (testing/decoder_program.h), its decode interface declared.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <utility>

#include "core/error.h"
#include "testing/decoder_program.h"
#include "tools/weft/mpk_commands.h"

namespace weft::cli {

MpkSubcommand add_mpk_decoder(CLI::App& mpk) {
  struct Args {
    std::string config = "qwen3-tiny", dtype = "bf16", output;
    int64_t cache = 0;
    // Kernel shapes (DecoderConfig); 0: the preset's.
    int64_t tile = 0, k_chunk = 0, kv_splits = 0, cache_chunk = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* d = mpk.add_subcommand("decoder", "Write a Qwen3-shaped decode-step program");
  d->add_option("--config", a->config, fmt::format("{}", fmt::join(decoder_presets(), " or ")))
      ->capture_default_str();
  d->add_option("--cache", a->cache, "KV-cache positions (default: the preset's)");
  d->add_option("--dtype", a->dtype, "Tensor dtype: bf16 or f32")->capture_default_str();
  d->add_option("--tile", a->tile,
                "Output columns per block of a projection kernel (default: the preset's)");
  d->add_option("--k-chunk", a->k_chunk,
                "Reduction rows per loop iteration (default: the preset's)");
  d->add_option("--kv-splits", a->kv_splits,
                "Attention blocks per KV head along the cache (default: the preset's)");
  d->add_option("--cache-chunk", a->cache_chunk,
                "Cache positions per attention loop iteration (default: the preset's)");
  d->add_option("-o,--output", a->output, "Output .weft file")->required();
  return {
      d, [a]() -> int {
        DecoderConfig c = decoder_config(a->config);
        if (a->cache != 0) c.cache = a->cache;
        for (auto [value, field] :
             {std::pair{a->tile, &c.tile}, std::pair{a->k_chunk, &c.k_chunk},
              std::pair{a->kv_splits, &c.kv_splits}, std::pair{a->cache_chunk, &c.cache_chunk}}) {
          if (value < 0)
            throw UserError(fmt::format("a kernel shape of {}: expected a positive number", value));
          if (value != 0) *field = value;
        }
        if (a->dtype != "bf16" && a->dtype != "f32")
          throw UserError(fmt::format("--dtype {}: expected bf16 or f32", a->dtype));
        c.dtype = a->dtype == "bf16" ? DType::bf16 : DType::f32;
        write_file(a->output, decoder_program(c));
        fmt::print("{}: {} layers, {} weight bytes per step ({})\n", a->output, c.layers,
                   decoder_weight_bytes(c), dtype_name(c.dtype));
        return 0;
      }};
}

}  // namespace weft::cli
