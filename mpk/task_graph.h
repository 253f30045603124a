// The MPK task graph: a lowered program as operators (one per kernel), tasks (one per block of a
// graph-defined kernel, one per library kernel), events (counters that launch tasks once enough
// tasks triggered them) and the workers' ahead-of-time task lists. Every pass of mpk/ maps a
// TaskGraph to a new one; docs/mpk.md describes the fields and the `.tgraph` text form.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"

namespace weft {

// Where a device tensor lives: a program input or output buffer of its own, or a byte range of
// the shared workspace (temps; the device-memory plan lets several share bytes).
enum class TensorHome : uint8_t { input, output, workspace };

struct TgTensor {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  int contiguous_dim = 0;  // layout as in lower/plan.h: that dim has stride 1, the rest row-major
  TensorHome home = TensorHome::workspace;
  int64_t slot = 0;  // input/output: position in the program's list; workspace: byte offset
  friend bool operator==(const TgTensor&, const TgTensor&) = default;
};

// A half-open box of tensor elements, [lo[d], hi[d]) in every dim.
struct Box {
  std::vector<int64_t> lo, hi;
  bool empty() const;
  friend bool operator==(const Box&, const Box&) = default;
};
bool boxes_intersect(const Box& a, const Box& b);

struct Access {
  int tensor = 0;  // index into TaskGraph::tensors
  Box box;
  friend bool operator==(const Access&, const Access&) = default;
};

struct Operator {
  std::string kernel;  // the plan kernel's name
  int kernel_index = 0;
  bool library = false;
  std::array<int64_t, 3> grid = {1, 1, 1};
  // Its tasks' work depends on data (attention over a filled KV length, sampling): in hybrid
  // dispatch it and what follows it up to the next barrier are dispatched just in time.
  bool data_dependent = false;
  // Bytes each of its tasks moves, when its declared accesses overstate them (whole tensors
  // declared for ordering where a task touches a data-dependent part: the decode loop's tasks);
  // -1: the bytes of its tasks' boxes. Only the assignment's cost estimate reads it.
  int64_t bytes = -1;
  friend bool operator==(const Operator&, const Operator&) = default;
};

inline constexpr int kNoEvent = -1;
inline constexpr int kEmptyTask = -1;  // Task::op of a task with no body (normalization)

struct Task {
  int op = kEmptyTask;
  std::array<int64_t, 3> bid = {0, 0, 0};
  std::vector<Access> reads, writes;
  std::vector<int> waits;     // events it waits for (sorted); normal form: exactly one
  std::vector<int> triggers;  // events it triggers when done (sorted); normal form: exactly one
  bool jit = false;           // dispatched by a scheduler when its event fires (else AOT)
  friend bool operator==(const Task&, const Task&) = default;
};

// begin: triggered once per iteration by the runtime, launches the tasks without predecessors;
// end: triggered by the tasks without successors, its firing ends the iteration.
enum class EventKind : uint8_t { begin, normal, end };

struct Event {
  EventKind kind = EventKind::normal;
  int64_t need = 0;  // triggers per iteration before it fires (begin: 1)
  // After linearization: the tasks it launches are [first, last]; -1 before (or none: end).
  int first = -1, last = -1;
  friend bool operator==(const Event&, const Event&) = default;
};

enum class Dispatch : uint8_t { aot, jit, hybrid };

struct TaskGraph {
  std::string name;
  std::vector<TgTensor> tensors;
  std::vector<Operator> ops;
  std::vector<Task> tasks;
  std::vector<Event> events;  // events[0] is begin and events[1] end once dependencies exist
  int workers = 0;            // 0 until assignment
  Dispatch dispatch = Dispatch::aot;
  std::vector<std::vector<int>>
      worker_lists;  // AOT tasks of each worker, in the order it runs them
  friend bool operator==(const TaskGraph&, const TaskGraph&) = default;
};

inline constexpr int kBeginEvent = 0;
inline constexpr int kEndEvent = 1;

std::string_view dispatch_name(Dispatch d);
// Throws UserError for a name other than aot, jit, hybrid.
Dispatch dispatch_by_name(std::string_view name);
std::string_view event_kind_name(EventKind k);

// Each event's triggering tasks and launched tasks, from the tasks' lists (sorted).
struct EventSides {
  std::vector<std::vector<int>> triggers, launches;
};
EventSides event_sides(const TaskGraph& g);

// Task-to-task successor edges through events (u triggers e, v waits for e), sorted, unique.
std::vector<std::vector<int>> task_successors(const TaskGraph& g);

// reach[u] holds v when a path of events leads from task u to task v (u itself excluded).
// Throws InternalError on a cycle.
std::vector<std::vector<uint64_t>> task_reachability(const TaskGraph& g);
inline bool reaches(const std::vector<std::vector<uint64_t>>& r, int u, int v) {
  return (r[u][v / 64] >> (v % 64)) & 1;
}

// The names of the input tensors that no task of `g` writes: read-only for a whole launch of it.
std::vector<std::string> unwritten_inputs(const TaskGraph& g);

// Counts of a compiled graph, for summaries and docs.
struct TaskGraphStats {
  int64_t tasks = 0, empty_tasks = 0, events = 0, jit_tasks = 0;
};
TaskGraphStats stats_of(const TaskGraph& g);

}  // namespace weft
