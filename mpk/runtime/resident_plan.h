// A plan's persistent kernel launched step after step on tensors placed once (host buffers in
// emulation, device buffers on a GPU): between launches the caller writes a few input elements,
// reads a few output elements and copies output elements into inputs where they lie, so state
// such as a KV cache stays resident and only what changes crosses to or from the device.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lower/plan.h"
#include "mpk/runtime/megakernel_run.h"
#include "mpk/runtime/placed_decode.h"

namespace weft {

class ResidentPlanRun {
 public:
  // Places `inputs` (f32, plan input order, stored in the plan's dtypes) once and sets up the
  // launch of `blob` on `kernel`. UserError for a wrong number or size of inputs, or as
  // LoadedMegakernel::prepare.
  ResidentPlanRun(const ProgramPlan& plan, const LoadedMegakernel& kernel,
                  const std::vector<uint8_t>& blob, const std::vector<std::vector<float>>& inputs,
                  int64_t workspace_bytes);
  ~ResidentPlanRun();
  ResidentPlanRun(const ResidentPlanRun&) = delete;
  ResidentPlanRun& operator=(const ResidentPlanRun&) = delete;

  // Elements [first, first + values.size()) of plan input `input`, rounded to its dtype. UserError
  // for a range outside the tensor.
  void write_input(size_t input, int64_t first, const std::vector<float>& values);
  // Elements [first, first + count) of plan output `output` as the last launch left them.
  std::vector<float> read_output(size_t output, int64_t first, int64_t count);
  // `count` elements of plan output `output` from element `from` into plan input `input` at
  // element `to`, where both lie (no host copy on a GPU). UserError for another dtype or a range
  // outside either tensor.
  void copy_output_to_input(size_t output, int64_t from, size_t input, int64_t to, int64_t count);
  // One launch of one iteration of the task graph; UserError when it trips the watchdog.
  MegakernelRun launch(bool trace = false);

  int64_t setup_bytes() const { return setup_bytes_; }  // placed once: inputs, outputs, workspace
  int64_t bytes_to_device() const { return bytes_to_device_; }  // by write_input, in all
  int64_t bytes_to_host() const { return bytes_to_host_; }      // by read_output, in all

 private:
  const PlanBuffer& input_tensor(size_t input) const;
  const PlanBuffer& output_tensor(size_t output) const;
  const ProgramPlan& plan_;
  HostBuffers host_;
  std::unique_ptr<DeviceBuffers> device_;  // on a GPU
  std::vector<void*> inputs_, outputs_;
  void* workspace_ = nullptr;
  std::unique_ptr<PreparedLaunch> launch_;
  int64_t setup_bytes_ = 0, bytes_to_device_ = 0, bytes_to_host_ = 0;
};

}  // namespace weft
