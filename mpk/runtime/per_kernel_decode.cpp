// The per-kernel decode loop on the device: the step's unit, its placement and its launches (one
// by one, or a CUDA graph replayed per token).
#include "mpk/runtime/per_kernel_decode.h"

#include <fmt/format.h>

#include <chrono>
#include <functional>

#include "core/error.h"
#include "mpk/decode_layout.h"
#include "mpk/runtime/cuda_error.h"
#include "mpk/runtime/decode_bodies.h"
#include "mpk/runtime/placed_decode.h"

namespace weft {

namespace {

#ifdef WEFT_HAVE_CUDA

// A stream of its own and, once captured, the step's graph.
class StepStream {
 public:
  StepStream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "a stream"); }
  StepStream(const StepStream&) = delete;
  StepStream& operator=(const StepStream&) = delete;
  ~StepStream() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
    cudaStreamDestroy(stream_);
  }
  void* stream() const { return stream_; }
  // Records `launch` (launches on stream()) as the graph; nothing runs. Relaxed: the unit's
  // launcher sets a kernel's shared-memory limit (cudaFuncSetAttribute) before each launch.
  void capture(const std::function<void()>& launch) {
    check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
    try {
      launch();
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph_);
      throw;
    }
    check(cudaStreamEndCapture(stream_, &graph_), "capturing a decode step as a CUDA graph");
    check(cudaGraphInstantiate(&exec_, graph_, 0), "cudaGraphInstantiate");
  }
  void replay() { check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch"); }
  void wait() { check(cudaStreamSynchronize(stream_), "a decode step"); }

 private:
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};
#else
// Without the toolkit no GPU program is built (build_program refuses), so none of this runs.
class StepStream {
 public:
  StepStream() { throw UserError("this weft was built without the CUDA toolkit"); }
  void* stream() const { return nullptr; }
  void capture(const std::function<void()>&) {}
  void replay() {}
  void wait() {}
};
#endif

// The decode bodies around the plan's: embed and rope_tables before, finish after.
CheckUnitExtras decode_extras(const ProgramPlan& plan) {
  CheckUnitExtras e;
  e.text = emit_decode_task_bodies(plan);
  const std::vector<DecodeOp> ops = decode_ops(decode_interface(plan));
  for (size_t j = 0; j < ops.size(); ++j)
    (ops[j].body == DecodeBody::finish ? e.after : e.before)
        .push_back({static_cast<uint32_t>(j), ops[j].name});
  return e;
}

}  // namespace

std::string emit_per_kernel_decode_unit(const ProgramPlan& plan, const TaskBodyOptions& bodies) {
  return emit_task_bodies_check_unit(plan, with_decode_bodies(plan, bodies),
                                     TaskBodyLaunch::per_kernel, decode_extras(plan));
}

PerKernelDecoder::PerKernelDecoder(const ProgramPlan& plan, bool emulated,
                                   const TaskBodyOptions& bodies, const BuildOptions& build)
    : plan_(plan), emulated_(emulated) {
  program_ = build_program(plan_, emulated ? Backend::cuda_emulation : Backend::cuda,
                           emit_per_kernel_decode_unit(plan_, bodies), build);
}

PerKernelDecoder::~PerKernelDecoder() = default;

PerKernelDecode PerKernelDecoder::decode(const DecodeOptions& options,
                                         const PerKernelDecodeOptions& o) const {
  if (o.cuda_graph && emulated_)
    throw UserError(fmt::format(
        "{}: a CUDA graph of the per-kernel decode step needs a GPU, not host emulation",
        plan_.name));
  PlacedDecode placed = place_decode(plan_, options, !emulated_);
  std::unique_ptr<StepStream> stream;
  if (!emulated_) stream = std::make_unique<StepStream>();
  void* const s = stream ? stream->stream() : nullptr;
  auto launch = [&] {
    program_->launch_raw(placed.inputs.data(), placed.outputs.data(), placed.workspace, s);
  };
  PerKernelDecode r;
  r.setup_bytes = placed.setup_bytes;
  r.bytes_per_step = placed.bytes_back(o.logits);
  std::vector<float> newest;  // the token each step left for the next
  for (int64_t step = 0; step < options.tokens; ++step) {
    // The first step is launched: on a GPU it loads the module and sets the kernel's shared
    // memory limit before any capture.
    const bool graph = o.cuda_graph && step > 0;
    if (graph && step == 1) stream->capture(launch);
    const auto t0 = std::chrono::steady_clock::now();
    if (graph)
      stream->replay();
    else
      launch();
    if (stream) stream->wait();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    (graph ? r.graph_seconds : r.launched_seconds) += seconds;
    ++(graph ? r.graph_steps : r.launched_steps);
    r.decode.run.seconds += seconds;
    newest.push_back(placed.token(step + 1));
    if (o.logits) r.decode.logits.push_back(placed.logits(plan_));
  }
  r.decode.tokens = placed.tokens(options.tokens);
  for (size_t step = 0; step < newest.size(); ++step)
    WEFT_CHECK(static_cast<int>(newest[step]) == r.decode.tokens[step + 1],
               "step {} left token {}, not {}", step, newest[step], r.decode.tokens[step + 1]);
  return r;
}

}  // namespace weft
