// The CUDA emitter's state and its parts, shared by the files that emit each part of the unit.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cuda/cuda_code.h"
#include "codegen/cuda/emit_task_bodies.h"
#include "lower/mma_tiling.h"
#include "lower/plan.h"

namespace weft::cuda_emit {

// Emits CUDA from a kernel plan: per-block code over shared buffers (every thread of the block
// strides over elements; reductions use one warp per result; f16/bf16 matmuls use mma.sync), and
// grid-stride kernels or cuBLAS for library kernels. Its parts are defined by concern in
// emit_cuda.cpp (the walk over the kernels, shared code, operands, parameters), emit_cuda_ops.cpp
// (the operators' element loops), emit_cuda_library.cpp (library kernels), emit_cuda_block.cpp
// (graph-defined kernels) and emit_cuda_entry.cpp (the launcher and the task switch).
class Emitter {
 public:
  explicit Emitter(const ProgramPlan& p) : p_(p) {}
  // Task-body mode (emit_task_bodies.h): block functions synchronizing their own threads only,
  // library kernels as CTA-level functions, weft_mpk_task instead of kernels and launcher.
  Emitter(const ProgramPlan& p, const TaskBodyFit& fit) : p_(p), fit_(&fit) {}

  std::string run();
  std::string run_task_bodies();

 private:
  template <class... A>
  void line(fmt::format_string<A...> f, A&&... a) {
    std::string text = fmt::format(f, std::forward<A>(a)...);
    out_ += (text.empty() ? "" : std::string(2 * ind_, ' ')) + text + "\n";
  }
  void open(const std::string& text);
  // The model kernels' bodies (emit_model_kernels.h) when a device-kernel call needs them.
  void model_kernel_bodies();
  void close(const char* text = "}");

  // Kernels whose code is the same but for their name and their tensors (a model's layers) share
  // one copy: the code emitted since `start` is dropped when an earlier kernel's is the same up to
  // names, and `k` runs the earlier kernel's code on its own tensors (code_of_). A 28-layer
  // decoder then compiles 1/28 of the code (nvcc took minutes per unit) and a persistent kernel
  // keeps one copy of each body in the instruction cache.
  void share_identical_code(const KernelPlan& k, size_t start);
  // `code` with comments dropped, the kernel's name (as an identifier or a prefix of one, as in
  // NAME_block) replaced, and the tensors T<i> renamed in order of first use: equal for two
  // kernels when one's code runs the other's on the tensors passed in the same order.
  static std::string canonical_code(const std::string& code, const std::string& name);

  std::string tvar(const std::string& name) const;
  Operand device(const std::string& name) const;
  // A shared buffer of kernel k; pipelined buffers address the slot `slot` (default: the
  // current one).
  Operand buffer(const KernelPlan& k, const std::string& name, const std::string& slot = "") const;
  // Opens `for (e = first; e < numel(shape); e += step)` and declares the row-major indices of
  // e over `shape`; returns their names ("0" for size-1 dims).
  std::vector<std::string> open_elements(const Shape& shape, const Workers& w,
                                         const std::string& var = "e");

  // Kernel parameters: the device tensors a kernel reads (const) and writes, in plan order.
  std::string params(const KernelPlan& k) const;
  // A kernel launched on its own may take every tensor __restrict__: no other code runs on them
  // during its launch. A task body may not, unless no task of its persistent launch writes the
  // tensor: a const __restrict__ pointer lets the compiler load through the non-coherent path
  // (ld.global.nc), which may return what another task's write has replaced.
  bool restricted(size_t tensor) const;
  // The tensors a kernel's code takes, in params' order.
  std::vector<size_t> tensor_args(const KernelPlan& k) const;
  std::string args(const KernelPlan& k) const;

  // ---------------------------------------------------------------- ops shared by both levels

  void elementwise(const Step& s, const std::vector<Operand>& ins, const Operand& out,
                   const Workers& w);
  // Warp per result when groups are long enough to keep lanes busy, else thread per result;
  // partials in f32 either way.
  void reduction(const Step& s, const Operand& in, const Operand& out, const Workers& w);
  // Data movement: every result element copied from its source element.
  void movement(const Step& s, const std::vector<Operand>& ins, const std::vector<Operand>& outs,
                const Workers& w);

  // ---------------------------------------------------------------- library kernels

  // Units of parallel work a library kernel's loops have (threads to launch).
  static int64_t library_units(const Step& s, const std::vector<Operand>& ins,
                               const std::vector<Operand>& outs);
  void library_kernel(const KernelPlan& k);
  // A library step's element loops over the workers `w` (a grid's threads, or a worker CTA's).
  void library_loops(const Step& s, const Workers& w);
  // A device-kernel call step (lower/plan.h): the model kernel's body over the workers `w`.
  void device_kernel_call(const Step& s, const Workers& w);

  // A library matmul C = A B: row-major m x kd times kd x n per element of C's batch dims
  // (`batch` of them, row-major); size-1 batch dims of an operand broadcast.
  struct LibraryMatmul {
    Operand a, b, c;
    size_t r;
    int64_t m, n, kd, batch;
  };
  LibraryMatmul library_matmul_shape(const KernelPlan& k) const;
  // Element offset of batch element `bb` in operand o of `mm`.
  static std::string batch_base(const LibraryMatmul& mm, const Operand& o);
  void library_matmul(const KernelPlan& k);
  // A library kernel as a CTA-level body: its element loops over the worker's threads, or the
  // device GEMM for a matmul.
  void library_body(const KernelPlan& k);

  // ---------------------------------------------------------------- graph-defined kernels

  // Index expressions of batch element `bb` (row-major over C's batch dims), then row, col.
  static std::vector<std::string> mm_index(const Shape& c_shape, const std::string& row,
                                           const std::string& col);
  // C (or a register accumulator `racc`) = A x B on tensor cores: ldmatrix fragments,
  // mma.sync.m16n8k16 with f32 accumulation; rows beyond m read row m-1 and are dropped.
  void mma_matmul(const KernelPlan& k, const Step& s, const MmaTiling& t, const std::string& racc);
  // Writes accumulator fragments `frag`[i][j][r] (for batch bb) to a shared buffer.
  void fragments_to(const MmaTiling& t, const Operand& c, const Shape& cs, const std::string& frag);
  // Scalar matmul: one thread per result element, f32 dot product; `accumulate_into` (an f32
  // accumulator) receives the result added instead of C.
  void scalar_matmul(const KernelPlan& k, const Step& s, const std::string& accumulate_into);
  // Device tile -> shared buffer: 16-byte copies (cp.async on sm_80+) when rows allow, else
  // element copies. `it` is the iteration whose chunk is loaded.
  void emit_load(const KernelPlan& k, const Step& s, const std::string& it,
                 const std::string& slot);
  // Shared buffer -> device tile of the block (omap), converting accumulators to the tensor type.
  void emit_store(const KernelPlan& k, const Step& s);
  void thread_step(const KernelPlan& k, const Step& t);
  void block_step(const KernelPlan& k, const Step& s);
  // A block barrier; in a task body, the named barrier of the body's threads only.
  void sync();
  void block_kernel(const KernelPlan& k);
  // One cp.async group with the loop's loads for iteration f (when it exists) into slot f % S.
  void issue_loads(const KernelPlan& k, const std::string& f);

  // ---------------------------------------------------------------- entry points

  void launcher();
  // weft_mpk_task: the tensors from the weft_cuda_launch arguments, then a switch over the
  // plan's kernels; threads beyond a body's return at once.
  void task_switch();
  // The device tensors T<i> of the plan, from the entry points' inputs / outputs / workspace.
  void tensor_pointers(bool stream);

  static constexpr int64_t kLibraryThreads = 256;
  static constexpr int64_t kMaxLibraryBlocks = 4096;
  static constexpr int64_t kDefaultSmemLimit = 48 * 1024;  // dynamic shared memory without opt-in
  static constexpr const char* kBid[3] = {"bx", "by", "bz"};

  const ProgramPlan& p_;
  const TaskBodyFit* fit_ = nullptr;  // task-body mode
  std::string out_;
  int ind_ = 0;
  std::map<std::string, size_t> tensor_index_;
  std::map<std::string, std::string> shared_code_;  // canonical_code -> first kernel with it
  std::map<std::string, std::string> code_of_;      // kernel -> the kernel whose code it runs
  std::map<std::string, std::string> buf_var_;
  std::map<std::string, std::string> fused_;    // matmul result -> accumulator it adds into
  std::set<std::string> skipped_accums_;        // accumulators fed by a fused matmul
  std::map<std::string, std::string> reg_acc_;  // accumulator -> register array
  Workers block_workers_;
  std::string slot_ = "0";
  bool in_loop_ = false;
  bool loads_in_flight_ = false;
};

}  // namespace weft::cuda_emit
