// Running a program's task graph and decoding with it, each against its reference.
#include "driver/mpk_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "core/error.h"
#include "mpk/runtime/host_runtime.h"
#include "mpk/runtime/trace.h"
#include "runtime/program.h"

namespace weft {

std::vector<std::vector<float>> seeded_megakernel_inputs(const ProgramPlan& plan) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::vector<float>> in;
  for (const std::string& name : plan.inputs) {
    in.emplace_back(static_cast<size_t>(numel(plan.find_tensor(name)->shape)));
    for (float& v : in.back()) v = u(rng);
  }
  return in;
}

MegakernelRunner::MegakernelRunner(MpkProgram program)
    : p_(std::move(program)),
      compiled_(compile_megakernel(p_)),
      graph_(decode_task_graph(compiled_.blob)) {}

MegakernelRunner::~MegakernelRunner() = default;

const MegakernelProgram& MegakernelRunner::megakernel() const {
  if (p_.platform == MpkPlatform::host)
    throw UserError(
        fmt::format("{} was prepared for the host runtime, not a persistent kernel", p_.name));
  std::lock_guard lock(build_mutex_);
  if (!megakernel_) megakernel_ = std::make_unique<MegakernelProgram>(p_.plan, p_.options);
  return *megakernel_;
}

const CpuProgram& MegakernelRunner::cpu_program() const {
  if (p_.platform != MpkPlatform::host)
    throw UserError(
        fmt::format("{} was prepared for a persistent kernel, not the host runtime", p_.name));
  std::lock_guard lock(build_mutex_);
  if (!cpu_program_)
    cpu_program_ =
        build_cpu_program(p_.plan, generate_source(p_.plan, Backend::cpu), host_build_options());
  return *cpu_program_;
}

namespace {

Backend per_kernel_backend(const MpkProgram& p) {
  return p.platform == MpkPlatform::gpu ? Backend::cuda : Backend::cuda_emulation;
}

// Host: the task graph on threads against the kernels one after another, on the same inputs.
MpkRunReport run_host(const MegakernelRunner& r, const MpkRunOptions& o,
                      const std::vector<std::vector<float>>& inputs) {
  const MpkProgram& p = r.program();
  HostTensors want(p.plan), got(p.plan);
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::copy(inputs[i].begin(), inputs[i].end(), want.inputs[i].begin());
    std::copy(inputs[i].begin(), inputs[i].end(), got.inputs[i].begin());
  }
  run_sequential(r.cpu_program(), want, o.iterations);
  HostRunOptions ro;
  ro.schedulers = p.options.kernel.schedulers;
  ro.delay_seed = o.delay_seed;
  ro.trace = o.trace;
  ro.iterations = o.iterations;
  HostRunResult run = run_on_host(p.plan, r.cpu_program(), r.device_graph(), got, ro);
  if (!run.ok) throw UserError(run.report);
  MpkRunReport report;
  report.same = got.outputs == want.outputs;
  report.seconds = run.seconds;
  if (o.trace) {
    report.trace_json = chrome_trace_json(r.device_graph(), run.trace, p.name);
    report.traced_tasks = run.trace.size();
  }
  report.outputs = std::move(got.outputs);
  return report;
}

// Emulation, gpu: one launch of the persistent kernel against the per-kernel CUDA path.
MpkRunReport run_device(const MegakernelRunner& r, const MpkRunOptions& o,
                        const std::vector<std::vector<float>>& inputs) {
  const MpkProgram& p = r.program();
  const MegakernelProgram& mk = r.megakernel();
  auto per_kernel = load_program(p.plan, per_kernel_backend(p));
  MegakernelResult m = mk.run(inputs, 1, o.trace);
  if (!m.run.ok) throw UserError(m.run.report);
  MpkRunReport report;
  report.same = m.outputs == per_kernel->run(inputs);
  report.seconds = m.run.seconds;
  if (o.trace) {
    report.trace_json = chrome_trace_json(r.device_graph(), m.run.trace, p.name);
    report.traced_tasks = m.run.trace.size();
  }
  report.outputs = std::move(m.outputs);
  return report;
}

// Whether the decodes agree with the reference (the host loop's, else the per-kernel launches').
std::optional<bool> same_decode(const MpkDecodeReport& r, const MpkDecodeOptions& o) {
  if (!o.host_reference && r.per_kernel.empty()) return std::nullopt;
  const DecodeResult& want =
      o.host_reference ? *o.host_reference : r.per_kernel.front().second.decode;
  const DecodeResult& got = r.resident.decode;
  bool same = got.tokens == want.tokens;
  for (const auto& [name, loop] : r.per_kernel)
    same = same && loop.decode.tokens == want.tokens &&
           (!o.logits || loop.decode.logits == want.logits);
  if (o.logits)
    for (size_t l = 0; l < got.logits.size(); ++l) {
      const size_t step =
          std::min<size_t>(want.logits.size(), (l + 1) * static_cast<size_t>(o.tokens_per_launch)) -
          1;
      same = same && got.logits[l] == want.logits[step];
    }
  return same;
}

}  // namespace

MpkRunReport MegakernelRunner::run(const MpkRunOptions& o) const {
  const std::vector<std::vector<float>> inputs =
      o.inputs.empty() ? seeded_megakernel_inputs(p_.plan) : o.inputs;
  if (inputs.size() != p_.plan.inputs.size())
    throw UserError(
        fmt::format("{} takes {} inputs, not {}", p_.name, p_.plan.inputs.size(), inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t n = numel(p_.plan.find_tensor(p_.plan.inputs[i])->shape);
    if (static_cast<int64_t>(inputs[i].size()) != n)
      throw UserError(fmt::format("input {} of {} has {} values, not {}", p_.plan.inputs[i],
                                  p_.name, inputs[i].size(), n));
  }
  return p_.platform == MpkPlatform::host ? run_host(*this, o, inputs)
                                          : run_device(*this, o, inputs);
}

MpkDecodeReport MegakernelRunner::decode(const MpkDecodeOptions& o) const {
  if (p_.platform == MpkPlatform::host || !p_.options.mpk.decode_on_device)
    throw UserError(fmt::format(
        "{}: decoding with the loop on the device needs the persistent kernel (emulation or gpu) "
        "prepared with the decode loop",
        p_.name));
  const MegakernelProgram& mk = megakernel();
  MpkDecodeReport r;
  r.resident = mk.decode(o.decode, {o.tokens_per_launch, o.logits, o.trace, o.after_launch});
  if (o.per_kernel) {
    const bool gpu = p_.platform == MpkPlatform::gpu;
    const PerKernelDecoder per_kernel(p_.plan, !gpu);
    r.per_kernel.emplace_back("per-kernel launches",
                              per_kernel.decode(o.decode, {false, o.logits}));
    if (gpu && o.decode.tokens > 1)
      r.per_kernel.emplace_back("per-kernel CUDA graph",
                                per_kernel.decode(o.decode, {true, o.logits}));
  }
  r.same = same_decode(r, o);
  if (o.trace) {
    std::vector<std::string> kernels;
    for (const Operator& op : compiled_.graph.ops) kernels.push_back(op.kernel);
    r.trace_json = chrome_trace_json(graph_, r.resident.traces, kernels, p_.plan.name);
  }
  return r;
}

}  // namespace weft
