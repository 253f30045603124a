// Pass 7: encoding. A compiled task graph as the compact blob a runtime loads (host threads now,
// a persistent GPU kernel later), and the blob decoded into the arrays the runtime reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mpk/device/protocol.cuh"
#include "mpk/task_graph.h"

namespace weft {

// Layout (little-endian; docs/mpk.md): a 32-byte header {char magic[8] = "WEFTMPK1"; u32 ops,
// tasks, events, workers, list_entries, begin_event (0)}, then ops[] (8 B each), tasks[] (20 B),
// events[] (16 B), list_offsets[workers + 1] (u32), list_tasks[list_entries] (u32), and an 8-byte
// FNV-1a hash of everything before it.
// The records are defined once, in the device-compatible protocol header the GPU reads them with.
using OpDesc = weft_mpk::OpDesc;
using TaskDesc = weft_mpk::TaskDesc;
using EventDesc = weft_mpk::EventDesc;
inline constexpr uint32_t kNoOp = weft_mpk::kNoOp;
inline constexpr uint16_t kTaskJit = weft_mpk::kTaskJit;
inline constexpr uint32_t kOpLibrary = weft_mpk::kOpLibrary;

struct DeviceGraph {
  uint32_t workers = 0;
  std::vector<OpDesc> ops;
  std::vector<TaskDesc> tasks;
  std::vector<EventDesc> events;
  std::vector<uint32_t> list_offsets;  // worker w runs list_tasks[list_offsets[w] .. [w+1])
  std::vector<uint32_t> list_tasks;
};

// Needs a normalized, linearized, assigned graph (InternalError otherwise); block coordinates must
// fit 16 bits (UserError otherwise).
std::vector<uint8_t> encode_task_graph(const TaskGraph& g);
// The blob of decoded arrays (encode_task_graph's last step; also for graphs built directly,
// such as the empty-task chain of mpk/bench/hop_chain.h). InternalError when the list offsets do
// not match the worker count.
std::vector<uint8_t> encode_device_graph(const DeviceGraph& graph);
// Throws UserError (naming `what`) for a blob with a wrong magic, size, hash or index.
DeviceGraph decode_task_graph(const std::vector<uint8_t>& blob, const std::string& what = "<blob>");
// The 64-bit FNV-1a hash the blob ends with.
uint64_t blob_hash(const uint8_t* data, size_t size);

}  // namespace weft
