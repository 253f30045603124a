// Host side of the protocol: graph views over decoded vectors, the state's memory, report text.
#include "mpk/runtime/runtime_proto.h"

#include <fmt/format.h>

namespace weft {

weft_mpk::GraphView view_of(const DeviceGraph& g) {
  return weft_mpk::GraphView{static_cast<uint32_t>(g.ops.size()),
                             static_cast<uint32_t>(g.tasks.size()),
                             static_cast<uint32_t>(g.events.size()),
                             g.workers,
                             g.ops.data(),
                             g.tasks.data(),
                             g.events.data(),
                             g.list_offsets.data(),
                             g.list_tasks.data()};
}

std::string format_report(const ProtocolReport& r) {
  const std::string who =
      fmt::format("{} {}", r.role == weft_mpk::kRoleWorker ? "worker" : "scheduler", r.who);
  const std::string op = r.op == kNoOp ? std::string("empty") : fmt::format("o{}", r.op);
  switch (static_cast<weft_mpk::ReportKind>(r.kind)) {
    case weft_mpk::kReportNone:
      return "";
    case weft_mpk::kReportTaskWait:
      return fmt::format(
          "watchdog: {} waits for task t{} (op {}, block [{},{},{}]) of iteration {}: event e{} "
          "counter {}, need {} x {} = {}",
          who, r.task, op, r.bx, r.by, r.bz, r.iteration, r.event, r.counter, r.need, r.iteration,
          r.need * r.iteration);
    case weft_mpk::kReportEndWait:
      return fmt::format(
          "watchdog: {} waits for the end of iteration {}: event e{} counter {}, need {}", who,
          r.iteration, r.event, r.counter, r.need * r.iteration);
    case weft_mpk::kReportEarlyJit:
      return fmt::format(
          "{} got JIT task t{} (op {}, block [{},{},{}]) of iteration {} before its event e{} "
          "fired ({} of {})",
          who, r.task, op, r.bx, r.by, r.bz, r.iteration, r.event, r.counter, r.need * r.iteration);
  }
  return fmt::format("unknown protocol report kind {} from {}", r.kind, who);
}

ProtocolMemory::ProtocolMemory(const DeviceGraph& g, uint32_t schedulers, uint64_t iterations,
                               bool traced)
    : graph(view_of(g)),
      layout(weft_mpk::make_layout(graph, schedulers)),
      state(weft_mpk::state_words(layout), 0) {
  if (traced) trace.assign(static_cast<size_t>(iterations * g.tasks.size()), TaskSpan{});
}

}  // namespace weft
