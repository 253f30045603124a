// Byte estimates of the search's stored objects, from their containers' capacities: the same
// objects give the same figure on every run, so budget decisions do not depend on the allocator.
#include "search/memory_account.h"

namespace weft {
namespace {

// libstdc++ keeps up to 15 characters inside the string object.
constexpr size_t kShortString = 15;

int64_t attrs_heap_bytes(const Attrs& attrs) {
  using Entry = std::pair<const std::string, AttrValue>;
  int64_t n = 0;
  for (const auto& [name, value] : attrs.entries()) {
    n += map_node_bytes(sizeof(Entry)) + heap_bytes(name);
    if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) n += heap_bytes(*list);
  }
  return n;
}

}  // namespace

int64_t heap_bytes(const std::string& s) {
  return s.capacity() > kShortString ? heap_chunk(static_cast<int64_t>(s.capacity() + 1)) : 0;
}

int64_t heap_bytes(const BlockSchedule& s) {
  return heap_bytes(s.iters);
}

int64_t heap_bytes(const BlockSketch& sk) {
  int64_t n = heap_bytes(sk.schedule) + heap_bytes(sk.ops) + heap_bytes(sk.saves) +
              heap_bytes(sk.output_types) + heap_bytes(sk.output_terms) +
              heap_bytes(sk.output_classes) + heap_bytes(sk.output_parts) +
              heap_bytes(sk.output_part_classes);
  for (const TensorType& t : sk.output_types) n += heap_bytes(t.shape);
  return n;
}

int64_t heap_bytes(const Graph& g) {
  int64_t n = heap_bytes(g.name) + heap_bytes(g.values) + heap_bytes(g.inputs) + heap_bytes(g.ops) +
              heap_bytes(g.outputs) + heap_bytes(g.loc.file);
  for (const Value& v : g.values)
    n += heap_bytes(v.name) + heap_bytes(v.type.shape) + heap_bytes(v.loc.file);
  for (const Op& op : g.ops) {
    n += heap_bytes(op.inputs) + heap_bytes(op.outputs) + attrs_heap_bytes(op.attrs) +
         heap_bytes(op.loc.file);
    // make_shared: the control block and the graph in one allocation.
    if (op.body) n += heap_chunk(16 + sizeof(Graph)) + heap_bytes(*op.body);
  }
  return n;
}

}  // namespace weft
