// `weft decode DIR --prompt IDS --tokens N [--backend B] [--megakernel [--workers N]]
// [--capacity C] [--function F] [--prefill F] [--weights W.npz] [--json FILE]`: greedy decoding
// with a compiled decoder whose KV cache is an input/output pair (driver/model_decode.h); the
// tokens on stdout, progress and timings on stderr.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "driver/compiled_dir.h"
#include "driver/model_decode.h"
#include "exec/npz.h"
#include "tools/weft/command.h"
#include "tools/weft/thread_flags.h"

namespace weft::cli {
namespace {

std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      throw UserError(fmt::format(
          "--prompt: '{}' is not a token id (give the prompt's ids as --prompt 12,7,93)", item));
    ids.push_back(v);
  }
  if (ids.empty()) throw UserError("--prompt: give the prompt's token ids, as --prompt 12,7,93");
  return ids;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

static Register reg(
    "decode",
    "Greedy decoding with a compiled decoder that takes its KV cache (past_key_values.* in, "
    "present.* out; or a .wmod step with its cache's length as int(p))",
    [](CLI::App& sub) {
      auto dir = std::make_shared<std::string>();
      auto prompt = std::make_shared<std::string>();
      auto tokens = std::make_shared<int64_t>(16);
      auto function = std::make_shared<std::string>("main");
      auto megakernel = std::make_shared<bool>(false);
      auto backend = std::make_shared<std::string>();
      auto workers = std::make_shared<int>(0);
      auto capacity = std::make_shared<int64_t>(0);
      auto json = std::make_shared<std::string>();
      auto prefill = std::make_shared<std::string>();
      auto weights = std::make_shared<std::string>();
      sub.add_option("DIR", *dir, "A directory `weft compile MODEL -o DIR` wrote")->required();
      sub.add_option("--prompt", *prompt, "The prompt's token ids, comma-separated")->required();
      sub.add_option("--tokens", *tokens, "Tokens to generate")->capture_default_str();
      sub.add_option("--function", *function, "The decode step's function")->capture_default_str();
      sub.add_flag("--megakernel", *megakernel,
                   "Each step one launch of the step's persistent kernel, the weights, KV cache "
                   "and mask resident where it runs (a cache of fixed capacity)");
      sub.add_option("--backend", *backend,
                     "How the step's µGraphs run on the VM, as for `weft run DIR` (interp, cpu, "
                     "cuda, cuda-emulation; default cpu); with --megakernel where the persistent "
                     "kernel runs: cuda-emulation (host threads, the default) or cuda (this "
                     "machine's GPU)")
          ->check(CLI::IsMember({"interp", "cpu", "cuda", "cuda-emulation"}));
      sub.add_option("--workers", *workers,
                     "With --megakernel: worker CTAs (default: the SMs but one on a GPU, 4 in "
                     "emulation)");
      sub.add_option("--capacity", *capacity,
                     "Cache slots: every step sees a past this long, slots masked until filled, "
                     "the prompt fed a token a step (default: a growing cache on the VM; the "
                     "least that holds the decode with --megakernel, or a fixed-shape export's "
                     "length). Compile DIR at its binding to use the compiled step")
          ->check(CLI::NonNegativeNumber);
      sub.add_option("--json", *json, "Also write the tokens and timings to this JSON file");
      sub.add_option("--prefill", *prefill,
                     "A step that takes its cache's length as an integer (no attention mask): the "
                     "function that runs the prompt (default: prefill)");
      sub.add_option("--weights", *weights,
                     "The step's other inputs by parameter name (.npz): a .wmod's weights");
      auto threads = std::make_shared<int>(0);
      cli::add_threads_option(sub, *threads);
      return [=]() -> int {
        const cli::ThreadCap cap(*threads);
        if (!is_compiled_model_dir(*dir))
          throw UserError(
              fmt::format("{} is not a directory `weft compile MODEL -o DIR` wrote", *dir));
        CompiledModelDir compiled(*dir);
        ModelDecodeOptions o;
        o.function = *function;
        o.prefill = *prefill;
        if (!weights->empty()) o.weights = read_npz(*weights);
        o.tokens = *tokens;
        o.path = *megakernel ? DecodePath::megakernel : DecodePath::vm;
        o.capacity = *capacity;
        if (*megakernel && !backend->empty() && *backend != "cuda" && *backend != "cuda-emulation")
          throw UserError("--megakernel runs with --backend cuda or cuda-emulation");
        const std::string where =
            backend->empty() ? (*megakernel ? "cuda-emulation" : "cpu") : *backend;
        o.executor = *ugraph_executor_by_name(where);
        o.platform = where == "cuda" ? MpkPlatform::gpu : MpkPlatform::emulation;
        o.workers = *workers;
        o.progress = [](const std::string& line) { fmt::print(stderr, "decode: {}\n", line); };
        const ModelDecodeResult r = decode_model(compiled, parse_ids(*prompt), o);
        if (!r.note.empty()) fmt::print(stderr, "note: {}\n", r.note);
        const std::string cache = r.capacity > 0 ? fmt::format("a cache of {} slots", r.capacity)
                                                 : std::string("a growing cache");
        const std::string how =
            *megakernel ? fmt::format("one persistent launch a step ({}{}), {}", where,
                                      r.stored_plan ? ", the plan DIR stored" : "", cache)
                        : fmt::format("the VM ({}), {}", where, cache);
        fmt::print(stderr, "decode: {} steps on {}: median step {:.3f} ms\n", r.step_seconds.size(),
                   how, median(r.step_seconds) * 1e3);
        if (*megakernel && r.capacity > 0)
          fmt::print(stderr,
                     "decode: built in {:.1f} s; {} bytes placed once, per step {:.0f} bytes to "
                     "the device and {:.0f} back\n",
                     r.build_seconds, r.setup_bytes, r.bytes_to_device_per_step,
                     r.bytes_to_host_per_step);
        else if (*megakernel)
          fmt::print(stderr,
                     "decode: every step traced and built for its own shape ({:.1f} s in all), "
                     "its inputs placed anew\n",
                     r.build_seconds);
        fmt::print("{}\n", fmt::join(r.tokens, ","));
        if (!json->empty()) {
          nlohmann::ordered_json j = {{"tokens", r.tokens},
                                      {"capacity", r.capacity},
                                      {"compiled_steps", r.compiled_steps},
                                      {"note", r.note},
                                      {"path", *megakernel ? "megakernel" : "vm"},
                                      {"step_seconds", r.step_seconds},
                                      {"median_step_seconds", median(r.step_seconds)}};
          if (*megakernel) {
            j["backend"] = where;
            j["stored_plan"] = r.stored_plan;
            j["build_seconds"] = r.build_seconds;
            j["setup_bytes"] = r.setup_bytes;
            j["bytes_to_device_per_step"] = r.bytes_to_device_per_step;
            j["bytes_to_host_per_step"] = r.bytes_to_host_per_step;
          }
          std::ofstream out(*json);
          out << j.dump(1) << "\n";
          if (!out) throw UserError(fmt::format("cannot write {}", *json));
        }
        return 0;
      };
    });

}  // namespace weft::cli
