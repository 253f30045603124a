// The task-graph runtime protocol, written once over a platform policy: workers run their
// ahead-of-time lists and the just-in-time tasks schedulers send them; schedulers dispatch the
// JIT tasks of fired events and start iterations. The host (std::thread, mpk/host_runtime.h) is
// one platform; a persistent GPU kernel is meant to be another. docs/mpk.md argues deadlock
// freedom.
//
// The platform P provides (all on uint64_t words of the shared state):
//   uint64_t load_acquire(const uint64_t* p);
//   uint64_t add_release(uint64_t* p, uint64_t v);  // returns the old value (acquire-release)
//   void relax();                                   // back off inside a spin
//   uint64_t clock_ns();
//   void group_barrier();                           // the worker's threads, after a task body
//   void run_task(uint32_t worker, const TaskDesc& task, const OpDesc& op);
//   void before_iteration(uint64_t k);  // scheduler 0, before iteration k (1-based) starts
//   void after_iteration(uint64_t k);   // scheduler 0, once iteration k's end event fired
//   void report(const std::string& message);  // the first watchdog trip
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mpk/encode.h"

namespace weft {

struct ProtocolConfig {
  uint32_t schedulers = 1;
  uint64_t iterations = 1;
  uint64_t watchdog_ns = 10'000'000'000;  // the longest any spin may wait
};

template <class P>
class TaskGraphProtocol {
 public:
  TaskGraphProtocol(const DeviceGraph& g, P& platform, const ProtocolConfig& config)
      : g_(g), p_(platform), cfg_(config), counters_(g.events.size(), 0) {
    const uint32_t jit_tasks = count_jit();
    for (uint32_t w = 0; w < g.workers; ++w) worker_q_.emplace_back(jit_tasks + 1);
    for (uint32_t s = 0; s < cfg_.schedulers; ++s) sched_q_.emplace_back(g.events.size() + 1);
    rr_.assign(cfg_.schedulers, 0);
    for (const EventDesc& e : g.events) {
      bool jit = false;
      for (uint32_t t = e.first; t <= e.last && e.first <= e.last; ++t)
        jit = jit || (g.tasks[t].flags & kTaskJit);
      event_has_jit_.push_back(jit);
    }
  }

  bool failed() const { return failed_ != 0; }

  // Worker w: its AOT list once per iteration, serving JIT tasks while it waits, then JIT tasks
  // until the last iteration's end event fires.
  void worker(uint32_t w) {
    for (uint64_t k = 1; k <= cfg_.iterations; ++k) {
      for (uint32_t i = g_.list_offsets[w]; i < g_.list_offsets[w + 1]; ++i) {
        const uint32_t t = g_.list_tasks[i];
        const TaskDesc& task = g_.tasks[t];
        uint64_t start = 0;
        while (p_.load_acquire(&counters_[task.wait]) < need(task.wait) * k) {
          if (serve_jit(w)) {
            start = 0;
            continue;
          }
          if (!keep_spinning(start,
                             [&] { return waiting(fmt::format("worker {}", w), t, k, task.wait); }))
            return;
        }
        execute(w, t, k);
      }
    }
    const uint64_t end_need = need(end_event()) * cfg_.iterations;
    uint64_t start = 0;
    while (p_.load_acquire(&counters_[end_event()]) < end_need) {
      if (serve_jit(w)) {
        start = 0;
        continue;
      }
      if (!keep_spinning(
              start,
              [&] {
                return fmt::format(
                    "worker {} waits for the end of iteration {}: event e{} counter {}, need {}", w,
                    cfg_.iterations, end_event(), p_.load_acquire(&counters_[end_event()]),
                    end_need);
              },
              2))
        return;
    }
  }

  // Scheduler s: dispatches the JIT launches of the events sent to it; scheduler 0 also starts
  // each iteration (begin event) and waits for its end event.
  void scheduler(uint32_t s) {
    for (uint64_t k = 1; k <= cfg_.iterations; ++k) {
      if (s == 0) {
        p_.before_iteration(k);
        p_.add_release(&counters_[kBeginEventId], 1);
        if (event_has_jit_[kBeginEventId]) dispatch(s, kBeginEventId, k);
      }
      const uint64_t end_need = need(end_event()) * k;
      uint64_t start = 0;
      while (p_.load_acquire(&counters_[end_event()]) < end_need) {
        uint64_t item;
        if (sched_q_[s].try_pop(p_, &item)) {
          dispatch(s, static_cast<uint32_t>(item), item >> 32);
          start = 0;
          continue;
        }
        if (!keep_spinning(
                start,
                [&] {
                  return fmt::format(
                      "scheduler {} waits for the end of iteration {}: event e{} counter {}, need "
                      "{}",
                      s, k, end_event(), p_.load_acquire(&counters_[end_event()]), end_need);
                },
                2))
          return;
      }
      if (s == 0) p_.after_iteration(k);
    }
  }

 private:
  static constexpr uint32_t kBeginEventId = 0;
  static constexpr uint32_t end_event() { return 1; }

  // A bounded ring of 64-bit items with ticketed producers and one consumer: a producer takes a
  // ticket, writes its slot, then publishes it by bumping the slot's sequence (release); the
  // consumer reads the slot once its sequence shows the ticket's round (acquire). Capacity covers
  // one iteration's items, and an iteration starts only after every item of the last one was
  // consumed, so no producer ever overtakes the consumer.
  struct Ring {
    explicit Ring(size_t capacity) : items(capacity, 0), seq(capacity, 0) {}
    std::vector<uint64_t> items, seq;
    uint64_t tail = 0;  // tickets taken (shared)
    uint64_t head = 0;  // the consumer's private position

    void push(P& p, uint64_t item) {
      const uint64_t ticket = p.add_release(&tail, 1);
      items[ticket % items.size()] = item;
      p.add_release(&seq[ticket % items.size()], 1);
    }
    bool try_pop(P& p, uint64_t* item) {
      const size_t slot = head % items.size();
      if (p.load_acquire(&seq[slot]) < head / items.size() + 1) return false;
      *item = items[slot];
      ++head;
      return true;
    }
  };

  uint32_t count_jit() const {
    uint32_t n = 0;
    for (const TaskDesc& t : g_.tasks) n += (t.flags & kTaskJit) != 0;
    return n;
  }

  uint64_t need(uint32_t e) const { return g_.events[e].need; }

  // Runs one popped JIT task, if any.
  bool serve_jit(uint32_t w) {
    uint64_t item;
    if (!worker_q_[w].try_pop(p_, &item)) return false;
    const uint32_t t = static_cast<uint32_t>(item);
    const uint64_t k = item >> 32;
    // Dispatched after its event fired; the acquire load also orders this body after every
    // trigger's writes.
    const uint32_t e = g_.tasks[t].wait;
    if (p_.load_acquire(&counters_[e]) < need(e) * k) {
      fail(fmt::format(
          "worker {} got JIT task t{} of iteration {} before its event e{} fired ({} of {})", w, t,
          k, e, p_.load_acquire(&counters_[e]), need(e) * k));
      return true;
    }
    execute(w, t, k);
    return true;
  }

  void execute(uint32_t w, uint32_t t, uint64_t k) {
    const TaskDesc& task = g_.tasks[t];
    if (task.op != kNoOp) p_.run_task(w, task, g_.ops[task.op]);
    p_.group_barrier();
    const uint64_t old = p_.add_release(&counters_[task.trigger], 1);
    if (old + 1 == need(task.trigger) * k && event_has_jit_[task.trigger] &&
        task.trigger != end_event())
      sched_q_[task.trigger % cfg_.schedulers].push(p_, (k << 32) | task.trigger);
  }

  void dispatch(uint32_t s, uint32_t e, uint64_t k) {
    const EventDesc& ev = g_.events[e];
    for (uint32_t t = ev.first; t <= ev.last && ev.first <= ev.last; ++t)
      if (g_.tasks[t].flags & kTaskJit) worker_q_[rr_[s]++ % g_.workers].push(p_, (k << 32) | t);
  }

  std::string waiting(const std::string& who, uint32_t t, uint64_t k, uint32_t e) {
    const TaskDesc& task = g_.tasks[t];
    return fmt::format(
        "{} waits for task t{} (op {}, block [{},{},{}]) of iteration {}: event e{} counter {}, "
        "need {} x {} = {}",
        who, t, task.op == kNoOp ? std::string("empty") : fmt::format("o{}", task.op), task.bx,
        task.by, task.bz, k, e, p_.load_acquire(&counters_[e]), need(e), k, need(e) * k);
  }

  // One step of a bounded spin: false once the run failed or this spin passed the watchdog.
  // Waits for the end of an iteration (schedulers, idle workers) span every task's wait, so they
  // get twice the limit: the spin on the stuck task itself trips first and names it.
  template <class Describe>
  bool keep_spinning(uint64_t& start, Describe&& describe, uint64_t limits = 1) {
    if (p_.load_acquire(&failed_) != 0) return false;
    const uint64_t now = p_.clock_ns();
    if (start == 0) start = now;
    if (now - start > cfg_.watchdog_ns * limits) {
      fail("watchdog: " + describe());
      return false;
    }
    p_.relax();
    return true;
  }

  void fail(const std::string& message) {
    if (p_.add_release(&failed_, 1) == 0) p_.report(message);
  }

  const DeviceGraph& g_;
  P& p_;
  ProtocolConfig cfg_;
  std::vector<uint64_t> counters_;
  std::vector<Ring> worker_q_, sched_q_;
  std::vector<uint64_t> rr_;  // each scheduler's round-robin position
  std::vector<bool> event_has_jit_;
  uint64_t failed_ = 0;
};

}  // namespace weft
