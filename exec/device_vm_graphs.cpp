// The device executor's runs at a binding: the first launched directly, then captured as a graph
// (CUDA, or emulated) that keeps every buffer the capture allocated; later runs replay it; and
// DeviceVm::time over the replays.
#include "exec/device_vm.h"

#include <fmt/format.h>

namespace weft {

namespace {
// The key of a run's binding: the function and every argument's shape (integers by value).
void append_key(const DeviceValue& v, std::string& key) {
  if (const DeviceTensor* t = v.tensor())
    key += shape_str(t->shape);
  else if (const DeviceTuple* tu = v.tuple()) {
    key += "(";
    for (const DeviceValue& x : *tu) append_key(x, key);
    key += ")";
  } else if (auto* i = std::get_if<int64_t>(&v.v))
    key += fmt::format("{};", *i);
}
std::string run_key(const std::string& name, const std::vector<DeviceValue>& args) {
  std::string key = name + ":";
  for (const DeviceValue& a : args) append_key(a, key);
  return key;
}
// Copies `from`'s tensors into `into`'s buffers where they differ (a captured run's arguments).
void refill(Device& device, const DeviceValue& into, const DeviceValue& from) {
  if (const DeviceTensor* t = into.tensor()) {
    const DeviceTensor* f = from.tensor();
    WEFT_CHECK(f && f->shape == t->shape, "a captured run's argument changed shape");
    if (f->data() != t->data() || f->dtype != t->dtype)
      device.copy(t->data(), f->data(), numel(t->shape) * dtype_bytes(t->dtype));
  } else if (const DeviceTuple* tu = into.tuple()) {
    for (size_t i = 0; i < tu->size(); ++i) refill(device, (*tu)[i], (*from.tuple())[i]);
  }
}
}  // namespace

DeviceValue DeviceVm::run(const std::string& name, const std::vector<DeviceValue>& args) {
  DeviceValue result = run_unchecked(name, args);
  check_device_errors();
  return result;
}

DeviceValue DeviceVm::run_unchecked(const std::string& name, const std::vector<DeviceValue>& args) {
  const VmFunction& f = vm_.compiled(name);
  ++stats_.runs;
  if (!device_->captures_graphs() || !options_.graphs) return call_function(f, args, 0);
  const std::string key = run_key(name, args);
  auto it = captured_.find(key);
  if (it != captured_.end()) {
    Captured& c = it->second;
    if (!c.graph) return call_function(f, args, 0);  // not capturable: launched each time
    for (size_t i = 0; i < args.size(); ++i) refill(*device_, c.args[i], args[i]);
    device_->replay(*c.graph);
    ++stats_.graph_replays;
    return c.result;
  }
  // The first run at a binding runs directly (lazily made handles such as cuBLAS's exist
  // before a capture); the second is captured, the later ones replay it.
  Captured& c = captured_[key];
  DeviceValue first = call_function(f, args, 0);
  try {
    check_device_errors();  // a bad index in the first run is not captured
  } catch (...) {
    captured_.erase(key);
    throw;
  }
  c.args = args;
  // Ends the capture unless it succeeded; the buffers it allocated are dropped after the abort.
  auto abandon = [&] {
    capturing_ = false;
    device_->abort_capture();
    capture_buffers_.clear();
  };
  try {
    device_->begin_capture();
    capturing_ = true;
    c.result = call_function(f, args, 0);
    capturing_ = false;
    c.graph = device_->end_capture();
    // The registers that held the temporaries are gone; the graph keeps their buffers.
    c.buffers = std::move(capture_buffers_);
    capture_buffers_.clear();
    ++stats_.graph_captures;
    device_->replay(*c.graph);  // nothing captured has run yet
    return c.result;
  } catch (const NotCapturable&) {
    abandon();
    c.args.clear();
    return first;
  } catch (...) {
    abandon();
    captured_.erase(key);
    throw;
  }
}

DeviceTiming DeviceVm::time(const std::string& name, const std::vector<DeviceValue>& args,
                            int warmup, int reps, DeviceValue* result) {
  if (reps < 1 || warmup < 0) throw UserError("--reps must be at least 1, --warmup at least 0");
  DeviceValue out = run(name, args);
  if (result) *result = out;
  DeviceTiming t;
  t.device_clock = device_->times_the_device();
  const Captured* c = nullptr;
  if (device_->captures_graphs() && options_.graphs) {
    auto it = captured_.find(run_key(name, args));
    if (it != captured_.end() && it->second.graph) c = &it->second;
  }
  if (c) {
    // run() copied `args` into the graph's argument buffers: replays compute the same result.
    t.graph_replays = true;
    t.timing = device_->time_on_stream([&] { device_->replay(*c->graph); }, warmup, reps);
    stats_.graph_replays += warmup + reps;
    check_device_errors();
  } else {
    t.timing = device_->time_on_stream([&] { run(name, args); }, warmup, reps);
  }
  return t;
}

}  // namespace weft
