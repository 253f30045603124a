// The persistent kernel's unit: prelude + bodies + constants + the embedded megakernel source.
#include "mpk/runtime/megakernel.h"

#include <fmt/format.h>

#include "codegen/cuda/prelude.h"
#include "core/embedded_files.h"
#include "core/error.h"
#include "mpk/runtime/runtime_proto.h"

namespace weft {

std::string emit_megakernel_unit(const std::string& bodies, const DeviceGraph& graph,
                                 const MegakernelOptions& options) {
  WEFT_CHECK(graph.workers >= 1 && options.schedulers >= 1, "{} workers, {} schedulers",
             graph.workers, options.schedulers);
  WEFT_CHECK(options.watchdog_s > 0, "watchdog of {} s", options.watchdog_s);
  const weft_mpk::Layout l = weft_mpk::make_layout(view_of(graph), options.schedulers);
  std::string unit = cuda_prelude();
  unit += "\n// The task bodies.\n" + bodies + "\n";
  unit += fmt::format(
      "\n// The task graph this unit runs: {} tasks, {} events.\n"
      "constexpr uint32_t weft_mpk_workers = {};\n"
      "constexpr uint32_t weft_mpk_schedulers = {};\n"
      "constexpr uint32_t weft_mpk_events = {};\n"
      "constexpr uint32_t weft_mpk_worker_cap = {};\n"
      "constexpr uint32_t weft_mpk_sched_cap = {};\n"
      "constexpr uint64_t weft_mpk_watchdog_ns = {}ull;\n\n",
      graph.tasks.size(), graph.events.size(), l.workers, l.schedulers, l.events, l.worker_cap,
      l.sched_cap, static_cast<uint64_t>(options.watchdog_s * 1e9));
  unit += expand_embedded("mpk/device/megakernel.cuh");
  return unit;
}

}  // namespace weft
