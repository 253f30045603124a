// The decode loop's tasks: the device layout of its state, the operators added to a decomposed
// task graph, and the text that runs their hand-written bodies.
#include "mpk/decode_tasks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "codegen/cuda/emit_cuda.h"
#include "core/embedded_files.h"
#include "core/error.h"
#include "mpk/decompose.h"

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

Box whole(const Shape& s) {
  return Box{std::vector<int64_t>(s.size(), 0), std::vector<int64_t>(s.begin(), s.end())};
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

int64_t decode_bodies_smem_bytes(int worker_threads) {
  return 8 * int64_t{worker_threads};  // the argmax's value and index per thread
}

TaskBodyOptions with_decode_bodies(const ProgramPlan& plan, TaskBodyOptions bodies) {
  // The decode bodies' shared memory depends on the worker's threads: resolve them first.
  bodies.worker_threads = fit_task_bodies(plan, bodies).worker_threads;
  bodies.extra_task_function = kDecodeTaskFunction;
  bodies.extra_smem_bytes = decode_bodies_smem_bytes(bodies.worker_threads);
  // The plan's kernels write no input; the decode tasks write X, the tables, the caches and M.
  bodies.read_only_tensors = unwritten_inputs(add_decode_tasks(plan_tensors(plan), plan));
  return bodies;
}

std::string emit_decode_task_bodies(const ProgramPlan& plan) {
  const DecodeInterface in = decode_interface(plan);
  const DecodeDeviceLayout layout = decode_device_layout(plan, in);
  auto type = [&](const std::string& name) {
    const PlanBuffer* t = plan.find_tensor(name);
    WEFT_CHECK(t && t->contiguous_dim == static_cast<int>(t->shape.size()) - 1,
               "decode tensor {} is not a row-major device tensor", name);
    return std::string(cuda_ctype(t->dtype));
  };
  auto input = [&](size_t slot, bool is_const) {
    const std::string& n = plan.inputs[slot];
    return fmt::format("static_cast<{}{}*>(inputs[{}])", is_const ? "const " : "", type(n), slot);
  };
  auto output = [&](size_t slot) {
    const std::string& n = plan.outputs[slot];
    return fmt::format("static_cast<const {}*>(outputs[{}])", type(n), slot);
  };
  std::string s = fmt::format(
      "\n// The decode loop's task bodies for '{}' (mpk/decode_tasks.h); the decode state is at\n"
      "// workspace byte {}.\n",
      plan.name, layout.state_offset);
  s += expand_embedded("mpk/device/decode_bodies.cuh");
  s += fmt::format(
      "\nWEFT_DEV void {}(uint32_t op, int, int, int, [[maybe_unused]] "
      "unsigned char* smem, void* const* inputs, [[maybe_unused]] void* const* outputs, unsigned "
      "char* workspace) {{\n"
      "  [[maybe_unused]] float* const state = reinterpret_cast<float*>(workspace + {});\n"
      "  switch (op) {{\n",
      kDecodeTaskFunction, layout.state_offset);
  const std::vector<DecodeOp> ops = decode_ops(in);
  for (size_t j = 0; j < ops.size(); ++j) {
    s += fmt::format("    case {}:  // {}\n", j, ops[j].name);
    switch (ops[j].body) {
      case DecodeBody::embed:
        if (in.emb)
          s += fmt::format(
              "      weft_decode_embed<weft_mpk_worker_threads>({}, {}, {}, 1, {}, state);\n",
              input(in.x, false), input(*in.emb, true), in.dim, in.vocab);
        else
          s += fmt::format(
              "      weft_decode_embed<weft_mpk_worker_threads>({}, reinterpret_cast<const "
              "float*>(workspace + {}), {}, {}, 1, state);\n",
              input(in.x, false), layout.table_offset, in.dim, in.dim);
        break;
      case DecodeBody::rope_tables:
        s += fmt::format(
            "      weft_decode_rope_tables<weft_mpk_worker_threads>({}, {}, reinterpret_cast<const "
            "double*>(workspace + {}), {}, state);\n",
            input(*in.cos, false), input(*in.sin, false), layout.inv_freq_offset, in.rope_dim / 2);
        break;
      case DecodeBody::finish:
        for (const DecodeLayer& y : in.layers)
          s += fmt::format(
              "      weft_decode_kv_append<weft_mpk_worker_threads>({}, {}, {}, {}, {}, {}, {}, "
              "state);\n",
              input(y.kc, false), input(y.vc, false), output(y.kn), output(y.vn), y.heads,
              y.head_dim, in.ctx);
        s += fmt::format(
            "      weft_decode_argmax_advance<weft_mpk_worker_threads>({}, {}, {}, state, "
            "reinterpret_cast<float*>(smem), reinterpret_cast<int*>(smem + 4 * "
            "weft_mpk_worker_threads));\n",
            output(in.logits), in.vocab, input(in.m, false));
        break;
    }
    s += "      return;\n";
  }
  s += "    default:\n      return;\n  }\n}\n";
  return s;
}

}  // namespace weft
