// The host-hook decode comparisons of `weft mpk run` and the dump of a decode.
#include "testing/mpk_demo.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "core/error.h"
#include "exec/npz.h"
#include "mpk/runtime/trace.h"
#include "runtime/program.h"
#include "testing/decode_demo.h"

namespace weft {

DecodeComparison decode_on_host_runtime(const MegakernelRunner& runner, DecodeOptions d,
                                        uint64_t delay_seed, bool trace) {
  const MpkProgram& p = runner.program();
  if (d.declared.empty()) d.declared = p.declared;
  DecodeComparison c;
  DecodeOptions reference = d;
  reference.keep_weights = false;
  c.want = decode_sequential(p.plan, runner.cpu_program(), reference);
  HostRunOptions ro;
  ro.schedulers = p.options.kernel.schedulers;
  ro.delay_seed = delay_seed;
  ro.trace = trace;
  c.got = decode_on_host(p.plan, runner.cpu_program(), runner.device_graph(), d, ro);
  if (!c.got.run.ok) throw UserError(c.got.run.report);
  c.seconds = c.got.run.seconds;
  if (trace) {
    c.trace_json = chrome_trace_json(runner.device_graph(), c.got.run.trace, p.name);
    c.traced_tasks = c.got.run.trace.size();
  }
  return c;
}

DecodeComparison decode_with_launches(const MegakernelRunner& runner, const DecodeOptions& d,
                                      bool trace) {
  const MpkProgram& p = runner.program();
  const MegakernelProgram& mk = runner.megakernel();
  DecodeComparison c;
  c.want = decode_per_kernel_with_host_hooks(p, d);
  std::vector<TaskSpan> last_trace;
  c.got = decode_with(p.plan, d, [&](const std::vector<std::vector<float>>& in) {
    MegakernelResult m = mk.run(in, 1, trace);
    if (!m.run.ok) throw UserError(m.run.report);
    c.seconds += m.run.seconds;
    last_trace = std::move(m.run.trace);
    return m.outputs;
  });
  if (trace) {
    c.trace_json = chrome_trace_json(runner.device_graph(), last_trace, p.name);
    c.traced_tasks = last_trace.size();
  }
  return c;
}

DecodeResult decode_per_kernel_with_host_hooks(const MpkProgram& p, const DecodeOptions& d) {
  auto per_kernel = load_program(
      p.plan, p.platform == MpkPlatform::gpu ? Backend::cuda : Backend::cuda_emulation);
  return decode_with(p.plan, d, [&](const auto& in) { return per_kernel->run(in); });
}

void write_decode_dump(const std::string& dir, const DecodeOptions& d, const DecodeResult& r) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw UserError(fmt::format("cannot create {}: {}", dir, ec.message()));
  auto as_tensor = [](const Shape& shape, const std::vector<float>& v) {
    return Tensor<double>(shape, std::vector<double>(v.begin(), v.end()));
  };
  std::map<std::string, Tensor<double>> weights;
  for (const NamedValues& w : r.weights) weights.emplace(w.name, as_tensor(w.shape, w.values));
  write_npz((std::filesystem::path(dir) / "weights.npz").string(), weights);
  std::vector<float> logits, tokens(r.tokens.begin(), r.tokens.end());
  for (const auto& l : r.logits) logits.insert(logits.end(), l.begin(), l.end());
  const int64_t steps = static_cast<int64_t>(r.logits.size());
  std::map<std::string, Tensor<double>> decode;
  decode.emplace("tokens", as_tensor({static_cast<int64_t>(tokens.size())}, tokens));
  decode.emplace(
      "logits",
      as_tensor({steps, steps ? static_cast<int64_t>(logits.size()) / steps : 0}, logits));
  decode.emplace("rope_theta", Tensor<double>({1}, std::vector<double>{d.rope_theta}));
  write_npz((std::filesystem::path(dir) / "decode.npz").string(), decode, true);
}

}  // namespace weft
