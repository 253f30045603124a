// Running µGraphs with the interpreter or a backend, comparing programs, summarizing outputs.
#include "driver/run.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>

#include "core/error.h"
#include "interp/interpreter.h"
#include "interp/random_inputs.h"
#include "runtime/cuda_runtime.h"
#include "runtime/host_tensors.h"

namespace weft {

bool keeps_declared_dtypes(const RunOptions& options) {
  return options.backend.has_value() && backend_target_kind(*options.backend) == TargetKind::gpu;
}

double output_tolerance(const RunOptions& options, DType dtype) {
  if (keeps_declared_dtypes(options)) return tolerance_for(dtype);
  // The cpu backend computes in f32.
  return tolerance_for(options.f32 || options.backend.has_value());
}

std::vector<Tensor<double>> run_graph(const Graph& graph, const std::vector<Tensor<double>>& inputs,
                                      const RunOptions& options) {
  if (!options.backend) {
    if (!options.target.empty())
      throw UserError("the reference interpreter has no target; only GPU backends take one");
    return evaluate_real(graph, inputs, options.f32);
  }
  const Target& target = backend_target(*options.backend, options.target);
  if (options.progress)
    options.progress(fmt::format("compiling {} for {} ({})", graph.name, target.name,
                                 backend_name(*options.backend)));
  auto prog = compile_program(graph, target, *options.backend, options.build);
  if (options.progress) options.progress(fmt::format("running {}", graph.name));
  return output_tensors(prog->plan(), prog->run(host_buffers_of(inputs)));
}

void require_same_signature(const Graph& a, const std::string& a_path, const Graph& b,
                            const std::string& b_path) {
  auto types = [](const Graph& g, const std::vector<ValueId>& ids) {
    std::vector<TensorType> out;
    for (ValueId v : ids) out.push_back(g.type(v));
    return out;
  };
  auto check = [&](const char* what, const std::vector<TensorType>& ta,
                   const std::vector<TensorType>& tb, const std::vector<ValueId>& ids) {
    if (ta.size() != tb.size())
      throw UserError(SourceLoc{a_path},
                      fmt::format("cannot compare: this program has {} {}s but {} has {}",
                                  ta.size(), what, b_path, tb.size()));
    for (size_t i = 0; i < ta.size(); ++i)
      if (!(ta[i] == tb[i]))
        throw UserError(
            a.value(ids[i]).loc,
            fmt::format("cannot compare: {} {} ('{}') is {} but {} {} of {} is {}", what, i + 1,
                        a.value(ids[i]).name, ta[i].str(), what, i + 1, b_path, tb[i].str()));
  };
  check("input", types(a, a.inputs), types(b, b.inputs), a.inputs);
  check("output", types(a, a.outputs), types(b, b.outputs), a.outputs);
}

ProgramComparison compare_programs(const Graph& program, const std::string& program_path,
                                   const Graph& reference, const std::string& reference_path,
                                   uint64_t seed, const RunOptions& options) {
  require_same_signature(program, program_path, reference, reference_path);
  auto inputs = random_inputs(program, seed);
  auto got = run_graph(program, inputs, options);
  auto want = run_graph(reference, inputs, options);
  ProgramComparison r;
  for (size_t i = 0; i < got.size(); ++i) {
    const TensorType& type = program.type(program.outputs[i]);
    Comparison c = compare_outputs(got[i], want[i], output_tolerance(options, type.dtype));
    r.all_ok = r.all_ok && c.ok;
    r.outputs.push_back({program.value(program.outputs[i]).name, type, c});
  }
  return r;
}

OutputSummary summarize_output(const Tensor<double>& t) {
  OutputSummary s;
  s.count = static_cast<int64_t>(t.data.size());
  double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
  for (double v : t.data) {
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
    sq += v * v;
  }
  s.min = mn;
  s.max = mx;
  s.mean = sum / static_cast<double>(t.data.size());
  s.l2 = std::sqrt(sq);
  for (size_t i = 0; i < std::min<size_t>(4, t.data.size()); ++i) s.first.push_back(t.data[i]);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (double v : t.data) {
    uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(v));
    for (int b = 0; b < 4; ++b) {
      h ^= (bits >> (8 * b)) & 0xFF;
      h *= 0x100000001b3ULL;
    }
  }
  s.checksum = h;
  return s;
}

}  // namespace weft
