// The decode state's place in the workspace and the decode loop's operators.
#include "mpk/decode_layout.h"

#include <fmt/format.h>

#include "core/error.h"

namespace weft {

namespace {

int64_t align_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

const char* body_name(DecodeBody b) {
  switch (b) {
    case DecodeBody::embed:
      return "decode_embed";
    case DecodeBody::rope_tables:
      return "decode_rope_tables";
    case DecodeBody::finish:
      return "decode_finish";
  }
  return "?";
}

}  // namespace

DecodeDeviceLayout decode_device_layout(const ProgramPlan& plan, const DecodeInterface& i) {
  // Integers in the f32 state are exact below 2^24.
  if (i.vocab > (int64_t{1} << 24) || i.ctx > (int64_t{1} << 24))
    throw UserError(fmt::format(
        "{}: a vocabulary of {} and a cache of {} positions; the device decode state holds token "
        "ids and positions as f32, exact below 2^24",
        plan.name, i.vocab, i.ctx));
  DecodeDeviceLayout l;
  l.state_offset = align_up(plan.workspace_bytes, 256);
  l.state_words = 2 + i.ctx + 1;
  int64_t end = l.state_offset + 4 * l.state_words;
  if (i.cos) {
    l.inv_freq_offset = align_up(end, 8);
    end = l.inv_freq_offset + 8 * (i.rope_dim / 2);
  }
  if (!i.emb) {
    l.table_offset = align_up(end, 16);
    end = l.table_offset + 4 * i.vocab * i.dim;
  }
  l.workspace_bytes = align_up(end, 256);
  return l;
}

std::vector<DecodeOp> decode_ops(const DecodeInterface& i) {
  std::vector<DecodeOp> ops;
  auto add = [&](DecodeBody b) { ops.push_back({b, body_name(b)}); };
  add(DecodeBody::embed);
  if (i.cos) add(DecodeBody::rope_tables);
  add(DecodeBody::finish);
  return ops;
}

}  // namespace weft
