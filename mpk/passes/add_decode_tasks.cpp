// The decode loop's operators added to a decomposed task graph, one task each.
#include "mpk/passes/add_decode_tasks.h"

#include <map>

#include "core/error.h"
#include "mpk/decode_layout.h"

namespace weft {

namespace {

Box whole(const Shape& s) {
  return Box{std::vector<int64_t>(s.size(), 0), std::vector<int64_t>(s.begin(), s.end())};
}

}  // namespace

TaskGraph add_decode_tasks(const TaskGraph& g, const ProgramPlan& plan) {
  const DecodeInterface in = decode_interface(plan);
  const DecodeDeviceLayout layout = decode_device_layout(plan, in);
  TaskGraph out = g;
  std::map<std::string, int> index;
  for (size_t t = 0; t < g.tensors.size(); ++t) index[g.tensors[t].name] = static_cast<int>(t);
  const int state = static_cast<int>(out.tensors.size());
  out.tensors.push_back(TgTensor{"decode_state", DType::f32, Shape{layout.state_words}, 0,
                                 TensorHome::workspace, layout.state_offset});
  auto access = [&](const std::string& name) {
    const int t = index.at(name);
    return Access{t, whole(g.tensors[static_cast<size_t>(t)].shape)};
  };
  const Access position{state, Box{{0}, {1}}}, all_state{state, whole(Shape{layout.state_words})};
  auto in_name = [&](size_t slot) { return plan.inputs[slot]; };
  auto out_name = [&](size_t slot) { return plan.outputs[slot]; };
  auto bytes = [&](const std::string& name, int64_t elements) {
    const TgTensor& t = g.tensors[static_cast<size_t>(index.at(name))];
    return elements * dtype_bytes(t.dtype);
  };
  auto all_bytes = [&](const std::string& name) {
    return bytes(name, numel(g.tensors[static_cast<size_t>(index.at(name))].shape));
  };

  std::vector<Operator> front, back;
  std::vector<Task> front_tasks, back_tasks;  // op: the index within front / back
  const std::vector<DecodeOp> ops = decode_ops(in);
  for (size_t j = 0; j < ops.size(); ++j) {
    const DecodeOp& d = ops[j];
    const bool before = d.body != DecodeBody::finish;
    std::vector<Operator>& list = before ? front : back;
    Task t;
    t.op = static_cast<int>(list.size());
    // What the task really moves where its declared accesses are whole tensors of which it
    // touches one position's part (the assignment's cost; -1: its boxes are what it moves).
    int64_t moved = -1;
    switch (d.body) {
      case DecodeBody::embed:
        t.reads = {all_state};
        if (in.emb) t.reads.push_back(access(in_name(*in.emb)));
        t.writes = {access(in_name(in.x))};
        // One column of EMB (or a row of the host's f32 table), X, the position and the token.
        moved =
            (in.emb ? bytes(in_name(*in.emb), in.dim) : 4 * in.dim) + all_bytes(in_name(in.x)) + 8;
        break;
      case DecodeBody::rope_tables:
        t.reads = {position};
        t.writes = {access(in_name(*in.cos)), access(in_name(*in.sin))};
        break;
      case DecodeBody::finish:
        for (const DecodeLayer& y : in.layers) {
          t.reads.push_back(access(out_name(y.kn)));
          t.reads.push_back(access(out_name(y.vn)));
          t.writes.push_back(access(in_name(y.kc)));
          t.writes.push_back(access(in_name(y.vc)));
        }
        t.reads.push_back(access(out_name(in.logits)));
        t.writes.push_back(all_state);
        t.writes.push_back(access(in_name(in.m)));
        // KN and VN read and appended at one position of the caches, the logits, the state's
        // position and token words, one mask entry.
        moved = all_bytes(out_name(in.logits)) + 8 + bytes(in_name(in.m), 1);
        for (const DecodeLayer& y : in.layers)
          moved += 2 * (all_bytes(out_name(y.kn)) + all_bytes(out_name(y.vn)));
        break;
    }
    (before ? front_tasks : back_tasks).push_back(std::move(t));
    list.push_back(
        Operator{d.name, static_cast<int>(plan.kernels.size() + j), true, {1, 1, 1}, false, moved});
  }
  const int shift = static_cast<int>(front.size());
  const int tail = shift + static_cast<int>(g.ops.size());
  out.ops = front;
  out.ops.insert(out.ops.end(), g.ops.begin(), g.ops.end());
  out.ops.insert(out.ops.end(), back.begin(), back.end());
  out.tasks = front_tasks;
  for (Task t : g.tasks) {
    if (t.op != kEmptyTask) t.op += shift;
    out.tasks.push_back(std::move(t));
  }
  for (Task t : back_tasks) {
    t.op += tail;
    out.tasks.push_back(std::move(t));
  }
  return out;
}
}  // namespace weft
