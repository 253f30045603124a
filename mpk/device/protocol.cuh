// The task-graph runtime protocol, written once for every platform: workers run their
// ahead-of-time lists and the just-in-time tasks schedulers send them; schedulers dispatch the
// JIT tasks of fired events and start iterations. Self-contained C++17 over <stdint.h> with
// WEFT_HD qualifiers, so the same code runs on host threads (mpk/runtime/host_runtime.cpp) and in
// the persistent GPU kernel (mpk/device/megakernel.cuh); all state is flat words in memory the
// platform provides. docs/mpk.md argues deadlock freedom.
//
// The platform P provides (all on uint64_t words of the shared state):
//   uint64_t load_acquire(const uint64_t* p);
//   uint64_t add_release(uint64_t* p, uint64_t v);  // returns the old value (acquire-release)
//   void relax();                                   // back off inside a spin
//   uint64_t clock_ns();
//   void run_task(uint32_t worker, const TaskDesc& task, const OpDesc& op);  // whole body
//   void group_barrier();               // the worker's threads, after a task (empty ones too)
//   void before_iteration(uint64_t k);  // scheduler 0, before iteration k (1-based) starts
//   void after_iteration(uint64_t k);   // scheduler 0, once iteration k's end event fired
//   void tripped();  // after the first failure's report is written (the GPU traps here)
#pragma once

#include <stdint.h>

#if defined(__CUDACC__) && !defined(WEFT_HOST_EMULATION)
#define WEFT_HD __host__ __device__
#else
#define WEFT_HD
#endif

namespace weft_mpk {

// The blob's records (mpk/encode.h writes them; the GPU reads them in place).
struct OpDesc {
  uint32_t kernel;  // index of the plan kernel whose block function runs
  uint32_t flags;   // bit 0: library kernel (one task runs it whole)
};
struct TaskDesc {
  uint32_t op;  // kNoOp: an empty task
  uint32_t wait, trigger;
  uint16_t bx, by, bz;
  uint16_t flags;  // bit 0: just-in-time
};
struct EventDesc {
  uint32_t need;
  uint32_t first, last;  // launched tasks [first, last]; first > last: none
  uint32_t kind;         // EventKind
};
static_assert(sizeof(OpDesc) == 8 && sizeof(TaskDesc) == 20 && sizeof(EventDesc) == 16,
              "the blob's record sizes");
inline constexpr uint32_t kNoOp = 0xffffffffu;
inline constexpr uint16_t kTaskJit = 1;
inline constexpr uint32_t kOpLibrary = 1;
inline constexpr uint32_t kBeginEvent = 0;
inline constexpr uint32_t kEndEvent = 1;
inline constexpr uint32_t kBlobHeaderBytes = 32;

// A task graph as arrays: the decoded blob's vectors on the host, the blob itself on the GPU.
struct GraphView {
  uint32_t ops, tasks, events, workers;
  const OpDesc* op;
  const TaskDesc* task;
  const EventDesc* event;
  const uint32_t* list_offsets;  // worker w runs list_tasks[list_offsets[w] .. [w+1])
  const uint32_t* list_tasks;
};

WEFT_HD inline uint32_t blob_u32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}
// The arrays of an encoded blob (mpk/encode.h layout), read in place; the blob must be 4-byte
// aligned and already validated (decode_task_graph on the host).
WEFT_HD inline GraphView view_blob(const unsigned char* blob) {
  GraphView g;
  g.ops = blob_u32(blob + 8);
  g.tasks = blob_u32(blob + 12);
  g.events = blob_u32(blob + 16);
  g.workers = blob_u32(blob + 20);
  const unsigned char* p = blob + kBlobHeaderBytes;
  g.op = reinterpret_cast<const OpDesc*>(p);
  p += sizeof(OpDesc) * g.ops;
  g.task = reinterpret_cast<const TaskDesc*>(p);
  p += sizeof(TaskDesc) * g.tasks;
  g.event = reinterpret_cast<const EventDesc*>(p);
  p += sizeof(EventDesc) * g.events;
  g.list_offsets = reinterpret_cast<const uint32_t*>(p);
  g.list_tasks = g.list_offsets + g.workers + 1;
  return g;
}

struct Config {
  uint32_t schedulers;
  uint64_t iterations;
  uint64_t watchdog_ns;  // the longest any spin may wait
};

// Sizes of the state: one counter per event; per worker a JIT ring (one slot per JIT task, plus
// one), per scheduler an event ring (one slot per event, plus one); round-robin positions; the
// failed flag.
struct Layout {
  uint32_t events, workers, schedulers, worker_cap, sched_cap;
};
WEFT_HD inline Layout make_layout(const GraphView& g, uint32_t schedulers) {
  uint32_t jit = 0;
  for (uint32_t t = 0; t < g.tasks; ++t) jit += (g.task[t].flags & kTaskJit) != 0;
  return Layout{g.events, g.workers, schedulers, jit + 1, g.events + 1};
}
// A ring's words: items[cap], seq[cap], tail (tickets taken), head (the consumer's position).
WEFT_HD constexpr uint64_t ring_words(uint32_t cap) {
  return 2ull * cap + 2;
}
// The state's size in 64-bit words; the platform zeroes them before a run.
WEFT_HD constexpr uint64_t state_words(const Layout& l) {
  return l.events + l.workers * ring_words(l.worker_cap) + l.schedulers * ring_words(l.sched_cap) +
         l.schedulers + 1;
}

// What stopped a run: written once, by the first failure, for the host to format
// (format_report, mpk/protocol_report.h).
enum ReportKind : uint32_t {
  kReportNone = 0,
  kReportTaskWait = 1,  // the watchdog: a worker waited too long for a task's event
  kReportEndWait = 2,   // the watchdog: a worker or scheduler waited too long for an end
  kReportEarlyJit = 3,  // protocol bug: a JIT task dispatched before its event fired
};
enum ReportRole : uint32_t { kRoleWorker = 0, kRoleScheduler = 1 };
struct Report {
  uint32_t kind;  // ReportKind
  uint32_t role;  // ReportRole
  uint32_t who;   // worker or scheduler index
  uint32_t task;  // kReportTaskWait, kReportEarlyJit
  uint32_t op;    // the task's op (kNoOp: empty)
  uint16_t bx, by, bz, pad;
  uint32_t event;
  uint64_t iteration;
  uint64_t counter;  // the event's counter when it tripped
  uint64_t need;     // the event's need per iteration
};

// One executed task: clock_ns() before its body and after its group barrier.
struct TaskSpan {
  uint64_t start, end;
  uint32_t worker, task;
};

// A bounded ring of 64-bit items with ticketed producers and one consumer: a producer takes a
// ticket, writes its slot, then publishes it by bumping the slot's sequence (release); the
// consumer reads the slot once its sequence shows the ticket's round (acquire). Capacity covers
// one iteration's items, and an iteration starts only after every item of the last one was
// consumed, so no producer ever overtakes the consumer.
struct Ring {
  uint64_t* items;
  uint32_t cap;
  WEFT_HD uint64_t* seq() const { return items + cap; }
  WEFT_HD uint64_t* tail() const { return items + 2 * cap; }
  WEFT_HD uint64_t* head() const { return items + 2 * cap + 1; }

  template <class P>
  WEFT_HD void push(P& p, uint64_t item) const {
    const uint64_t ticket = p.add_release(tail(), 1);
    items[ticket % cap] = item;
    p.add_release(&seq()[ticket % cap], 1);
  }
  template <class P>
  WEFT_HD bool try_pop(P& p, uint64_t* item) const {
    const uint64_t h = *head();
    if (p.load_acquire(&seq()[h % cap]) < h / cap + 1) return false;
    *item = items[h % cap];
    *head() = h + 1;
    return true;
  }
};

template <class P>
class Protocol {
 public:
  // `state` holds state_words(layout) zeroed words; `trace` (may be null) one TaskSpan per task
  // and iteration, at (k - 1) * tasks + t.
  WEFT_HD Protocol(const GraphView& g, const Layout& layout, const Config& config, uint64_t* state,
                   Report* report, TaskSpan* trace, P& platform)
      : g_(g),
        l_(layout),
        cfg_(config),
        state_(state),
        report_(report),
        trace_(trace),
        p_(platform) {}

  WEFT_HD bool failed() { return p_.load_acquire(failed_word()) != 0; }

  // Worker w: its AOT list once per iteration, serving JIT tasks while it waits, then JIT tasks
  // until the last iteration's end event fires.
  WEFT_HD void worker(uint32_t w) {
    for (uint64_t k = 1; k <= cfg_.iterations; ++k) {
      for (uint32_t i = g_.list_offsets[w]; i < g_.list_offsets[w + 1]; ++i) {
        const uint32_t t = g_.list_tasks[i];
        const uint32_t e = g_.task[t].wait;
        Spin spin;
        for (;;) {
          const uint64_t have = p_.load_acquire(&counter(e));
          if (have >= need(e) * k) break;
          if (serve_jit(w)) {
            spin = Spin{};
            continue;
          }
          // The begin event of an iteration fires once the previous one ended: that wait is an
          // end-of-iteration wait.
          const bool begin = e == kBeginEvent;
          if (!keep_spinning(spin, begin ? 2 : 1, begin ? kAnyProgress : have,
                             wait_report(kReportTaskWait, kRoleWorker, w, t, k, e)))
            return;
        }
        execute(w, t, k);
      }
    }
    const uint64_t end_need = need(kEndEvent) * cfg_.iterations;
    Spin spin;
    while (p_.load_acquire(&counter(kEndEvent)) < end_need) {
      if (serve_jit(w)) {
        spin = Spin{};
        continue;
      }
      if (!keep_spinning(spin, 2, kAnyProgress, end_report(kRoleWorker, w, cfg_.iterations)))
        return;
    }
  }

  // Scheduler s: dispatches the JIT launches of the events sent to it; scheduler 0 also starts
  // each iteration (begin event) and waits for its end event.
  WEFT_HD void scheduler(uint32_t s) {
    for (uint64_t k = 1; k <= cfg_.iterations; ++k) {
      if (s == 0) {
        p_.before_iteration(k);
        p_.add_release(&counter(kBeginEvent), 1);
        if (has_jit(kBeginEvent)) dispatch(s, kBeginEvent, k);
      }
      const uint64_t end_need = need(kEndEvent) * k;
      Spin spin;
      while (p_.load_acquire(&counter(kEndEvent)) < end_need) {
        uint64_t item;
        if (sched_ring(s).try_pop(p_, &item)) {
          dispatch(s, static_cast<uint32_t>(item), item >> 32);
          spin = Spin{};
          continue;
        }
        if (!keep_spinning(spin, 2, kAnyProgress, end_report(kRoleScheduler, s, k))) return;
      }
      if (s == 0) p_.after_iteration(k);
    }
  }

 private:
  WEFT_HD uint64_t& counter(uint32_t e) { return state_[e]; }
  WEFT_HD Ring worker_ring(uint32_t w) {
    return Ring{state_ + l_.events + w * ring_words(l_.worker_cap), l_.worker_cap};
  }
  WEFT_HD Ring sched_ring(uint32_t s) {
    return Ring{
        state_ + l_.events + l_.workers * ring_words(l_.worker_cap) + s * ring_words(l_.sched_cap),
        l_.sched_cap};
  }
  WEFT_HD uint64_t* rr(uint32_t s) {
    return state_ + l_.events + l_.workers * ring_words(l_.worker_cap) +
           l_.schedulers * ring_words(l_.sched_cap) + s;
  }
  WEFT_HD uint64_t* failed_word() { return rr(0) + l_.schedulers; }

  WEFT_HD uint64_t need(uint32_t e) const { return g_.event[e].need; }
  WEFT_HD bool has_jit(uint32_t e) const {
    const EventDesc& ev = g_.event[e];
    for (uint32_t t = ev.first; t <= ev.last && ev.first <= ev.last; ++t)
      if (g_.task[t].flags & kTaskJit) return true;
    return false;
  }

  // Runs one popped JIT task, if any.
  WEFT_HD bool serve_jit(uint32_t w) {
    uint64_t item;
    if (!worker_ring(w).try_pop(p_, &item)) return false;
    const uint32_t t = static_cast<uint32_t>(item);
    const uint64_t k = item >> 32;
    // Dispatched after its event fired; the acquire load also orders this body after every
    // trigger's writes.
    const uint32_t e = g_.task[t].wait;
    if (p_.load_acquire(&counter(e)) < need(e) * k) {
      fail(wait_report(kReportEarlyJit, kRoleWorker, w, t, k, e));
      return true;
    }
    execute(w, t, k);
    return true;
  }

  WEFT_HD void execute(uint32_t w, uint32_t t, uint64_t k) {
    const TaskDesc& task = g_.task[t];
    const uint64_t start = trace_ ? p_.clock_ns() : 0;
    if (task.op != kNoOp) p_.run_task(w, task, g_.op[task.op]);
    p_.group_barrier();
    if (trace_) trace_[(k - 1) * g_.tasks + t] = TaskSpan{start, p_.clock_ns(), w, t};
    const uint64_t old = p_.add_release(&counter(task.trigger), 1);
    if (old + 1 == need(task.trigger) * k && task.trigger != kEndEvent && has_jit(task.trigger))
      sched_ring(task.trigger % l_.schedulers).push(p_, (k << 32) | task.trigger);
  }

  WEFT_HD void dispatch(uint32_t s, uint32_t e, uint64_t k) {
    const EventDesc& ev = g_.event[e];
    for (uint32_t t = ev.first; t <= ev.last && ev.first <= ev.last; ++t)
      if (g_.task[t].flags & kTaskJit) {
        const uint64_t w = (*rr(s))++ % g_.workers;
        worker_ring(static_cast<uint32_t>(w)).push(p_, (k << 32) | t);
      }
  }

  WEFT_HD Report wait_report(uint32_t kind, uint32_t role, uint32_t who, uint32_t t, uint64_t k,
                             uint32_t e) {
    const TaskDesc& task = g_.task[t];
    return Report{kind, role, who, t, task.op, task.bx, task.by, task.bz, 0, e, k, 0, need(e)};
  }
  WEFT_HD Report end_report(uint32_t role, uint32_t who, uint64_t k) {
    return Report{kReportEndWait, role, who, 0, kNoOp, 0, 0, 0, 0, kEndEvent, k, 0,
                  need(kEndEvent)};
  }

  // A bounded spin's clock: when it started (0: not yet) and the progress it last saw.
  struct Spin {
    uint64_t start = 0;
    uint64_t seen = ~0ull;
  };
  static constexpr uint64_t kAnyProgress = ~0ull;

  // Tasks completed so far, every worker and iteration: each task adds one to its trigger's
  // counter. Read only when a spin is about to trip (once per watchdog period), never per task.
  WEFT_HD uint64_t completed_tasks() {
    uint64_t sum = 0;
    for (uint32_t e = 0; e < g_.events; ++e) sum += p_.load_acquire(&counter(e));
    return sum;
  }

  // One step of a bounded spin: false once the run failed or the watchdog tripped. The limit
  // counts time without progress, not time spent waiting, so a long wait while work goes on
  // never trips: a task's wait restarts its clock whenever its event's counter (`progress`)
  // moves; the waits for an iteration's end (`kAnyProgress`) restart it whenever any task
  // completed since the spin last looked, which is checked at each period's end (a real stall
  // is reported one to two periods after the last completion). The end waits also get twice the
  // limit, so the spin on the stuck task itself trips first and names it.
  WEFT_HD bool keep_spinning(Spin& spin, uint64_t limits, uint64_t progress, const Report& r) {
    if (p_.load_acquire(failed_word()) != 0) return false;
    const uint64_t now = p_.clock_ns();
    if (progress != kAnyProgress && progress != spin.seen) {
      spin.seen = progress;
      spin.start = now;
    }
    if (spin.start == 0) spin.start = now;
    if (now - spin.start > cfg_.watchdog_ns * limits) {
      const uint64_t done = progress == kAnyProgress ? completed_tasks() : progress;
      if (progress == kAnyProgress && done != spin.seen) {
        spin.seen = done;
        spin.start = now;
      } else {
        fail(r);
        return false;
      }
    }
    p_.relax();
    return true;
  }

  // The first failure writes the report (with the event's counter now), then the platform stops
  // (the GPU traps); later ones only see the flag.
  WEFT_HD void fail(Report r) {
    if (p_.add_release(failed_word(), 1) != 0) return;
    r.counter = p_.load_acquire(&counter(r.event));
    *report_ = r;
    p_.tripped();
  }

  GraphView g_;
  Layout l_;
  Config cfg_;
  uint64_t* state_;
  Report* report_;
  TaskSpan* trace_;
  P& p_;
};

}  // namespace weft_mpk
