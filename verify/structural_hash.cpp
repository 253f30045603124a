// Structural hashing of graphs and of the cones of kernel-level values.
#include "verify/structural_hash.h"

#include <string_view>
#include <variant>

#include "verify/field.h"

namespace weft {
namespace {

uint64_t hash_str(std::string_view s) {
  uint64_t h = 0x736872ULL;
  for (char c : s) h = ff::mix64(h, static_cast<unsigned char>(c));
  return ff::mix64(h, s.size());
}

uint64_t hash_type(const TensorType& t) {
  uint64_t h = ff::mix64(0x747970ULL, static_cast<uint64_t>(t.dtype));
  for (int64_t d : t.shape) h = ff::mix64(h, static_cast<uint64_t>(d));
  return ff::mix64(h, t.shape.size());
}

uint64_t hash_attrs(const Attrs& attrs) {
  uint64_t h = 0x617474ULL;
  for (const auto& [name, value] : attrs.entries()) {
    h = ff::mix64(h, hash_str(name), value.index());
    if (const auto* i = std::get_if<int64_t>(&value)) {
      h = ff::mix64(h, static_cast<uint64_t>(*i));
    } else if (const auto* r = std::get_if<Rational>(&value)) {
      h = ff::mix64(h, static_cast<uint64_t>(r->num()), static_cast<uint64_t>(r->den()));
    } else {
      for (int64_t x : std::get<std::vector<int64_t>>(value))
        h = ff::mix64(h, static_cast<uint64_t>(x));
    }
  }
  return h;
}

// Op-local part of a hash: kind, attributes, stage and nested body.
uint64_t hash_op_head(const Op& op) {
  uint64_t h = ff::mix64(0x6f70ULL, static_cast<uint64_t>(op.kind), hash_attrs(op.attrs));
  h = ff::mix64(h, static_cast<uint64_t>(op.stage));
  if (op.body) h = ff::mix64(h, structural_hash(*op.body));
  return h;
}

}  // namespace

uint64_t structural_hash(const Graph& g) {
  uint64_t h = ff::mix64(0x677270ULL, static_cast<uint64_t>(g.level));
  for (int64_t d : g.grid) h = ff::mix64(h, static_cast<uint64_t>(d));
  h = ff::mix64(h, static_cast<uint64_t>(g.loop));
  for (const Value& v : g.values) h = ff::mix64(h, hash_type(v.type));
  for (ValueId v : g.inputs) h = ff::mix64(h, static_cast<uint64_t>(v));
  for (const Op& op : g.ops) {
    h = ff::mix64(h, hash_op_head(op));
    for (ValueId v : op.inputs) h = ff::mix64(h, 0x69ULL, static_cast<uint64_t>(v));
    for (ValueId v : op.outputs) h = ff::mix64(h, 0x6fULL, static_cast<uint64_t>(v));
  }
  for (ValueId v : g.outputs) h = ff::mix64(h, 0x4fULL, static_cast<uint64_t>(v));
  return h;
}

std::vector<uint64_t> value_hashes(const Graph& g) {
  std::vector<uint64_t> h(g.values.size(), 0);
  for (size_t i = 0; i < g.inputs.size(); ++i)
    h[g.inputs[i]] = ff::mix64(0x696e70ULL, i, hash_type(g.type(g.inputs[i])));
  for (const Op& op : g.ops) {
    uint64_t base = hash_op_head(op);
    for (ValueId v : op.inputs) base = ff::mix64(base, h[v]);
    for (size_t r = 0; r < op.outputs.size(); ++r)
      h[op.outputs[r]] = ff::mix64(base, r, hash_type(g.type(op.outputs[r])));
  }
  return h;
}

}  // namespace weft
