// Blob writer and reader: plain arrays copied byte for byte after a counted header.
#include "mpk/encode.h"

#include <cstring>

#include "core/error.h"

namespace weft {

namespace {

constexpr char kMagic[8] = {'W', 'E', 'F', 'T', 'M', 'P', 'K', '1'};

template <class T>
void put(std::vector<uint8_t>& out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}
template <class T>
void put_all(std::vector<uint8_t>& out, const std::vector<T>& v) {
  for (const T& x : v) put(out, x);
}

}  // namespace

uint64_t blob_hash(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

std::vector<uint8_t> encode_task_graph(const TaskGraph& g) {
  DeviceGraph d;
  d.workers = static_cast<uint32_t>(g.workers);
  WEFT_CHECK(g.workers >= 1 && g.worker_lists.size() == static_cast<size_t>(g.workers),
             "encoding needs an assigned graph");
  for (const Operator& o : g.ops)
    d.ops.push_back(OpDesc{static_cast<uint32_t>(o.kernel_index), o.library ? kOpLibrary : 0u});
  for (const Task& t : g.tasks) {
    WEFT_CHECK(t.waits.size() == 1 && t.triggers.size() == 1, "encoding needs normal form");
    for (int64_t b : t.bid)
      if (b > 0xffff)
        throw UserError(fmt::format("block coordinate {} does not fit the 16-bit descriptor", b));
    d.tasks.push_back(TaskDesc{t.op == kEmptyTask ? kNoOp : static_cast<uint32_t>(t.op),
                               static_cast<uint32_t>(t.waits[0]),
                               static_cast<uint32_t>(t.triggers[0]),
                               static_cast<uint16_t>(t.bid[0]), static_cast<uint16_t>(t.bid[1]),
                               static_cast<uint16_t>(t.bid[2]), t.jit ? kTaskJit : uint16_t{0}});
  }
  for (const Event& e : g.events) {
    WEFT_CHECK(e.kind == EventKind::end || e.first >= 0, "encoding needs a linearized graph");
    d.events.push_back(
        EventDesc{static_cast<uint32_t>(e.need), static_cast<uint32_t>(e.first < 0 ? 1 : e.first),
                  static_cast<uint32_t>(e.first < 0 ? 0 : e.last), static_cast<uint32_t>(e.kind)});
  }
  d.list_offsets.push_back(0);
  for (const auto& list : g.worker_lists) {
    for (int t : list) d.list_tasks.push_back(static_cast<uint32_t>(t));
    d.list_offsets.push_back(static_cast<uint32_t>(d.list_tasks.size()));
  }
  return encode_device_graph(d);
}

std::vector<uint8_t> encode_device_graph(const DeviceGraph& d) {
  WEFT_CHECK(d.list_offsets.size() == d.workers + size_t{1}, "{} list offsets for {} workers",
             d.list_offsets.size(), d.workers);
  std::vector<uint8_t> out(kMagic, kMagic + 8);
  for (uint32_t v :
       {static_cast<uint32_t>(d.ops.size()), static_cast<uint32_t>(d.tasks.size()),
        static_cast<uint32_t>(d.events.size()), d.workers,
        static_cast<uint32_t>(d.list_tasks.size()), static_cast<uint32_t>(kBeginEvent)})
    put(out, v);
  put_all(out, d.ops);
  put_all(out, d.tasks);
  put_all(out, d.events);
  put_all(out, d.list_offsets);
  put_all(out, d.list_tasks);
  put(out, blob_hash(out.data(), out.size()));
  return out;
}

DeviceGraph decode_task_graph(const std::vector<uint8_t>& blob, const std::string& what) {
  auto bad = [&](const std::string& why) { return UserError(fmt::format("{}: {}", what, why)); };
  if (blob.size() < 40 || std::memcmp(blob.data(), kMagic, 8) != 0)
    throw bad("not a weft task-graph blob (magic WEFTMPK1)");
  uint32_t h[6];
  std::memcpy(h, blob.data() + 8, sizeof h);
  DeviceGraph d;
  d.workers = h[3];
  const uint64_t size = 32 + uint64_t{h[0]} * 8 + uint64_t{h[1]} * 20 + uint64_t{h[2]} * 16 +
                        (uint64_t{h[3]} + 1) * 4 + uint64_t{h[4]} * 4 + 8;
  if (size != blob.size())
    throw bad(fmt::format("{} bytes, the header says {}", blob.size(), size));
  uint64_t stored;
  std::memcpy(&stored, blob.data() + size - 8, 8);
  if (stored != blob_hash(blob.data(), size - 8)) throw bad("hash mismatch (corrupt blob)");
  size_t at = 32;
  auto take = [&](auto& vec, uint32_t count) {
    vec.resize(count);
    if (count == 0) return;  // an empty vector's data() may be null, which memcpy must not get
    std::memcpy(vec.data(), blob.data() + at, count * sizeof(vec[0]));
    at += count * sizeof(vec[0]);
  };
  take(d.ops, h[0]);
  take(d.tasks, h[1]);
  take(d.events, h[2]);
  take(d.list_offsets, h[3] + 1);
  take(d.list_tasks, h[4]);
  if (d.events.size() < 2) throw bad("fewer than the two events begin and end");
  for (const TaskDesc& t : d.tasks)
    if ((t.op != kNoOp && t.op >= d.ops.size()) || t.wait >= d.events.size() ||
        t.trigger >= d.events.size())
      throw bad("a task names an operator or event out of range");
  for (const EventDesc& e : d.events)
    if (e.first <= e.last && e.last >= d.tasks.size())
      throw bad("an event launches tasks out of range");
  for (size_t w = 0; w < d.workers; ++w)
    if (d.list_offsets[w] > d.list_offsets[w + 1] || d.list_offsets[w + 1] > d.list_tasks.size())
      throw bad("worker list offsets out of order");
  for (uint32_t t : d.list_tasks)
    if (t >= d.tasks.size()) throw bad("a worker list names a task out of range");
  return d;
}

}  // namespace weft
