// A lowered plan as one persistent kernel: compile, emit, build, and run on host or device buffers.
#include "mpk/runtime/megakernel_program.h"

#include <fmt/format.h>

#include <cstring>

#include "core/dtype_convert.h"
#include "core/error.h"
#include "mpk/decode_layout.h"
#include "mpk/device/megakernel_abi.cuh"
#include "mpk/encode.h"
#include "mpk/runtime/cuda_error.h"
#include "mpk/runtime/decode_bodies.h"
#include "mpk/runtime/placed_decode.h"

namespace weft {

MegakernelUnit emit_megakernel_program_unit(const ProgramPlan& plan,
                                            const MegakernelProgramOptions& options) {
  TaskBodyOptions body_options = options.bodies;
  if (body_options.runtime_smem_reserve_bytes == 0)
    body_options.runtime_smem_reserve_bytes = kWeftMpkCommandBytes;
  body_options.runtime_threads = kWeftMpkProtocolThreads;
  if (options.mpk.decode_on_device) body_options = with_decode_bodies(plan, body_options);
  MegakernelUnit u;
  fit_task_bodies(plan, body_options);  // a body that does not fit fails before compiling
  u.compiled = compile_task_graph(plan, options.mpk);
  // __restrict__ only on what no task of this launch writes, as its own task graph says.
  body_options.read_only_tensors = unwritten_inputs(u.compiled.graph);
  u.fit = fit_task_bodies(plan, body_options);
  std::string bodies = emit_cuda_task_bodies(plan, body_options);
  if (options.mpk.decode_on_device) bodies += emit_decode_task_bodies(plan);
  u.unit = emit_megakernel_unit(bodies, decode_task_graph(u.compiled.blob), options.kernel);
  return u;
}

MegakernelProgram::MegakernelProgram(const ProgramPlan& plan,
                                     const MegakernelProgramOptions& options)
    : plan_(plan), decode_on_device_(options.mpk.decode_on_device) {
  MegakernelUnit u = emit_megakernel_program_unit(plan_, options);
  fit_ = std::move(u.fit);
  compiled_ = std::move(u.compiled);
  unit_ = std::move(u.unit);
  kernel_ = build_megakernel(unit_, options.emulated, options.arch);
}

MegakernelProgram::~MegakernelProgram() = default;

namespace {
// run and time start from outputs and workspace of 0xff bytes: no decode state to start from.
void refuse_decode_tasks(bool decode_on_device, const ProgramPlan& plan) {
  if (decode_on_device)
    throw UserError(fmt::format(
        "{}: a persistent kernel with the decode loop's tasks runs through decode(), which "
        "places the decode state first",
        plan.name));
}
}  // namespace

Timing MegakernelProgram::time(const std::vector<std::vector<float>>& inputs, uint64_t iterations,
                               int warmup, int reps) const {
  refuse_decode_tasks(decode_on_device_, plan_);
  HostBuffers host = host_buffers(plan_, inputs, workspace_bytes());
  if (kernel_->emulated())
    return kernel_->time(compiled_.blob, pointers(host.in), pointers(host.out),
                         host.workspace.data(), iterations, warmup, reps);
#ifdef WEFT_HAVE_CUDA
  DeviceBuffers dev(host);
  return kernel_->time(compiled_.blob, dev.in, dev.out, dev.workspace, iterations, warmup, reps);
#else
  throw UserError("this weft was built without the CUDA toolkit: no GPU megakernel runs");
#endif
}

MegakernelResult MegakernelProgram::run(const std::vector<std::vector<float>>& inputs,
                                        uint64_t iterations, bool trace) const {
  refuse_decode_tasks(decode_on_device_, plan_);
  HostBuffers host = host_buffers(plan_, inputs, workspace_bytes());
  MegakernelResult result;
  if (kernel_->emulated()) {
    result.run = kernel_->run(compiled_.blob, pointers(host.in), pointers(host.out),
                              host.workspace.data(), iterations, trace);
    result.outputs = decode_outputs(plan_, host);
    return result;
  }
#ifdef WEFT_HAVE_CUDA
  DeviceBuffers dev(host);
  result.run = kernel_->run(compiled_.blob, dev.in, dev.out, dev.workspace, iterations, trace);
  if (result.run.ok)
    for (size_t j = 0; j < host.out.size(); ++j)
      check(cudaMemcpy(host.out[j].data(), dev.out[j], host.out[j].size(), cudaMemcpyDeviceToHost),
            "cudaMemcpy of an output");
  result.outputs = decode_outputs(plan_, host);
  return result;
#else
  throw UserError("this weft was built without the CUDA toolkit: no GPU megakernel runs");
#endif
}

std::unique_ptr<ResidentPlanRun> MegakernelProgram::resident(
    const std::vector<std::vector<float>>& inputs) const {
  refuse_decode_tasks(decode_on_device_, plan_);
  return std::make_unique<ResidentPlanRun>(plan_, *kernel_, compiled_.blob, inputs,
                                           workspace_bytes());
}

int64_t MegakernelProgram::workspace_bytes() const {
  if (decode_on_device_)
    return decode_device_layout(plan_, decode_interface(plan_)).workspace_bytes;
  return plan_.workspace_bytes + 256;
}

ResidentDecode MegakernelProgram::decode(const DecodeOptions& options,
                                         const ResidentDecodeOptions& resident) const {
  if (!decode_on_device_)
    throw UserError(fmt::format(
        "{}: the persistent kernel was built without the decode tasks (decode_on_device)",
        plan_.name));
  if (resident.tokens_per_launch < 1)
    throw UserError(fmt::format("{} tokens per launch", resident.tokens_per_launch));
  PlacedDecode placed = place_decode(plan_, options, !kernel_->emulated());
  ResidentDecode r;
  r.setup_bytes = placed.setup_bytes;
  std::unique_ptr<PreparedLaunch> launch =
      kernel_->prepare(compiled_.blob, placed.inputs, placed.outputs, placed.workspace);
  r.bytes_per_launch = placed.bytes_back(resident.logits);
  std::vector<float> newest;  // the token each launch left for the next step
  int64_t done = 0;
  while (done < options.tokens) {
    const int64_t n = std::min<int64_t>(resident.tokens_per_launch, options.tokens - done);
    MegakernelRun run = launch->run(static_cast<uint64_t>(n), resident.trace);
    if (!run.ok) throw UserError(fmt::format("the persistent kernel tripped: {}", run.report));
    r.decode.run.seconds += run.seconds;
    if (resident.trace) r.traces.push_back({done, std::move(run.trace)});
    ++r.launches;
    done += n;
    if (resident.after_launch) resident.after_launch(done);
    newest.push_back(placed.token(done));
    if (resident.logits) r.decode.logits.push_back(placed.logits(plan_));
  }
  r.decode.tokens = placed.tokens(options.tokens);
  int64_t at = 0;
  for (size_t l = 0; l < newest.size(); ++l) {
    at = std::min<int64_t>(options.tokens, at + resident.tokens_per_launch);
    WEFT_CHECK(static_cast<int>(newest[l]) == r.decode.tokens[static_cast<size_t>(at)],
               "launch {} left token {}, not {}", l, newest[l],
               r.decode.tokens[static_cast<size_t>(at)]);
  }
  return r;
}

}  // namespace weft
