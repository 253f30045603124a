// A decode-step program's buffers placed once for a decode loop on the device: the inputs in the
// plan's dtypes, the outputs and workspace as NaN bytes, the decode state (mpk/decode_layout.h) in
// the workspace, on the host (emulation) or copied to the GPU. The persistent kernel's resident
// decode (mpk/runtime/megakernel_program.h) and the per-kernel decode loop
// (mpk/runtime/per_kernel_decode.h) both start from it, so the two paths decode from the same
// bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lower/plan.h"
#include "mpk/decode_layout.h"
#include "mpk/runtime/decode_data.h"

namespace weft {

// Host buffers in the plan's dtypes: inputs encoded, outputs and workspace 0xff bytes (NaN in
// every dtype, so an element no task writes shows up).
struct HostBuffers {
  std::vector<std::vector<uint8_t>> in, out;
  std::vector<uint8_t> workspace;
};
// UserError for a wrong number or size of inputs.
HostBuffers host_buffers(const ProgramPlan& plan, const std::vector<std::vector<float>>& inputs,
                         int64_t workspace_bytes);
std::vector<std::vector<float>> decode_outputs(const ProgramPlan& plan, const HostBuffers& b);
std::vector<void*> pointers(std::vector<std::vector<uint8_t>>& buffers);

// Device copies of host buffers (cudaMalloc and a copy each), freed on destruction. UserError
// when a CUDA call fails or weft was built without the CUDA toolkit.
struct DeviceBuffers {
  std::vector<void*> in, out;
  void* workspace = nullptr;
  explicit DeviceBuffers(const HostBuffers& host);
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  ~DeviceBuffers();
};

// The placed decode: where launches read and write (host buffers in emulation, device buffers on a
// GPU), in plan input and output order and the workspace of decode_device_layout.
struct PlacedDecode {
  DecodeInterface interface;
  DecodeDeviceLayout layout;
  int64_t prompt = 0;  // tokens fed first (the prompt, or the first token)
  HostBuffers host;
  std::unique_ptr<DeviceBuffers> device;  // on a GPU
  std::vector<void*> inputs, outputs;
  unsigned char* workspace = nullptr;
  int64_t setup_bytes = 0;  // bytes placed: every input, output and the workspace

  // Copies `bytes` at `src` (where launches write) to the host.
  void fetch(void* dst, const void* src, size_t bytes) const;
  // Token `i` of the state (the newest a step left, for instance).
  float token(int64_t i) const;
  // LOGITS as the last step left them, as floats.
  std::vector<float> logits(const ProgramPlan& plan);
  // Bytes a step or launch copies back: the newest token id, and LOGITS when `logits`.
  int64_t bytes_back(bool logits) const;
  // The tokens after `decoded` steps (the prompt or first token, then one per step), checking the
  // state's position is `decoded`.
  std::vector<int> tokens(int64_t decoded) const;
};

// Seeds the weights and the first step's inputs (decode_start) and places them with the state:
// position 0, the prompt's length and tokens, the rotary inverse frequencies and a host-held
// embedding table. UserError when the plan does not follow the decode interface or the prompt
// does not fit the cache.
PlacedDecode place_decode(const ProgramPlan& plan, const DecodeOptions& options, bool on_gpu);

}  // namespace weft
