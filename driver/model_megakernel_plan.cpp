// A traced model run as one kernel plan: buffers to plan tensors (arguments as inputs, the rest
// laid out in one workspace, µGraph tensors as views at their buffers' bytes), launches to
// kernels in order, results copied into outputs.
#include "driver/model_megakernel_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "codegen/cuda/device/model_kernel_args.cuh"
#include "codegen/cuda/model_kernel_families.h"
#include "core/error.h"
#include "lower/interval_alloc.h"

namespace weft {

namespace {

constexpr int64_t kAlign = 256;            // workspace offsets: what cudaMalloc gives each buffer
constexpr int64_t kMaxTasksPerCall = 128;  // about the workers of one GPU

// Where a buffer of the trace lives in the plan: an input (by name) or bytes of the workspace,
// with the plan tensor that names all of it.
struct Region {
  const unsigned char* begin = nullptr;
  int64_t bytes = 0;
  std::string tensor;
  bool input = false;
  int64_t offset = 0;  // workspace byte offset (not an input)
};

class PlanBuilder {
 public:
  PlanBuilder(const std::string& name, const std::string& target) {
    plan_.name = name;
    plan_.target = target;
  }

  void add_input(const NamedDeviceTensor& t) {
    PlanBuffer b = device_tensor(t.name, TensorRole::input, t.tensor.dtype, t.tensor.shape);
    plan_.tensors.push_back(b);
    plan_.inputs.push_back(t.name);
    regions_.push_back(
        {static_cast<const unsigned char*>(t.tensor.data()), b.bytes(), t.name, true, 0});
  }

  // Bytes of the workspace from `offset` on are a traced buffer's (`data`), or, at offset -1,
  // new bytes after all others (a buffer the plan adds: data null, found by name only).
  void add_buffer(const void* data, int64_t bytes, int64_t offset = -1) {
    const std::string name = fmt::format("buf{}", buffers_++);
    if (offset < 0) {
      offset = workspace_;
      workspace_ += (std::max<int64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    }
    // A flat view of the bytes: f16 elements, the smallest the plan has.
    PlanBuffer b =
        device_tensor(name, TensorRole::temp, DType::f16, {std::max<int64_t>(1, bytes / 2)});
    b.offset = offset;
    plan_.tensors.push_back(b);
    regions_.push_back(
        {static_cast<const unsigned char*>(data), data ? bytes : 0, name, false, offset});
  }
  // Workspace bytes below `bytes` are the traced buffers' (buffer_offsets).
  void reserve(int64_t bytes) { workspace_ = std::max(workspace_, bytes); }

  void add_launch(const TracedLaunch& l) {
    if (l.program)
      add_ugraph(l);
    else
      add_model_kernel(l);
  }

  // Copies `from` (a result tensor of the run) into the plan output `name`.
  void add_output(const NamedDeviceTensor& t) {
    plan_.tensors.push_back(
        device_tensor(t.name, TensorRole::output, t.tensor.dtype, t.tensor.shape));
    plan_.outputs.push_back(t.name);
    weft_dk_map_args a = flat_copy(t.tensor.dtype, t.tensor.dtype, numel(t.tensor.shape));
    const auto [from, off] = locate(t.tensor.data(), "result " + t.name);
    add_kernel_step(DkFamily::map, &a, sizeof a, OpKind::reshape, t.name,
                    {{0, from, off}, {1, t.name, 0}});
  }

  ProgramPlan finish() {
    plan_.workspace_bytes = workspace_;
    return std::move(plan_);
  }

 private:
  struct Pointer {
    size_t field;
    std::string tensor;
    int64_t offset;
  };

  static PlanBuffer device_tensor(const std::string& name, TensorRole role, DType dtype,
                                  Shape shape) {
    PlanBuffer b;
    b.name = name;
    b.space = MemSpace::device;
    b.role = role;
    b.dtype = dtype;
    if (shape.empty()) shape = {1};
    b.shape = std::move(shape);
    b.contiguous_dim = static_cast<int>(b.shape.size()) - 1;
    return b;
  }

  // The region holding `p` and the byte offset into it.
  std::pair<std::string, int64_t> locate(const void* p, const std::string& what) const {
    const auto* at = static_cast<const unsigned char*>(p);
    for (const Region& r : regions_)
      if (r.begin && at >= r.begin && at < r.begin + std::max<int64_t>(r.bytes, 1))
        return {r.tensor, at - r.begin};
    WEFT_FAIL("{}: pointer outside every buffer of the trace", what);
  }
  const Region& region(const std::string& tensor) const {
    for (const Region& r : regions_)
      if (r.tensor == tensor) return r;
    WEFT_FAIL("no region {}", tensor);
  }

  static weft_dk_map_args flat_copy(DType from, DType to, int64_t n) {
    weft_dk_map_args a{};
    a.in_dtype = dk_dtype_code(from);
    a.out_dtype = dk_dtype_code(to);
    a.rank = 1;
    a.numel = n;
    a.dims[0] = n;
    a.out_stride[0] = 1;
    a.div[0] = 1;
    a.step[0] = 1;
    a.bound[0] = std::numeric_limits<int64_t>::max() / 4;
    a.mod[0] = std::numeric_limits<int64_t>::max() / 4;
    a.in_stride[0] = 1;
    return a;
  }

  // One library kernel running family `f` on `args` with `pointers` set.
  void add_kernel_step(DkFamily f, const void* args, size_t bytes, OpKind op,
                       const std::string& var, const std::vector<Pointer>& pointers) {
    const DkFamilyInfo& info = dk_family(f);
    WEFT_CHECK(bytes == info.args_bytes, "{}: {} bytes of arguments, the struct has {}", info.name,
               bytes, info.args_bytes);
    std::vector<int64_t> words(bytes / 8);
    std::memcpy(words.data(), args, bytes);
    Step s;
    s.kind = StepKind::call;
    s.op = op;
    std::vector<int64_t> ptrs;
    // Operands: the read pointers' tensors, then the written ones; a tensor once per list.
    auto operand = [&](std::vector<std::string>& list, const std::string& t, size_t base) {
      auto it = std::find(list.begin(), list.end(), t);
      if (it == list.end()) it = list.insert(list.end(), t);
      return static_cast<int64_t>(base + static_cast<size_t>(it - list.begin()));
    };
    for (const Pointer& p : pointers)
      if (!info.pointers.at(p.field).written) operand(s.inputs, p.tensor, 0);
    for (const Pointer& p : pointers) {
      const DkPointerField& field = info.pointers.at(p.field);
      std::memset(reinterpret_cast<unsigned char*>(words.data()) + field.offset, 0, sizeof(void*));
      const int64_t index = field.written ? operand(s.outputs, p.tensor, s.inputs.size())
                                          : operand(s.inputs, p.tensor, 0);
      ptrs.insert(ptrs.end(), {static_cast<int64_t>(p.field), index, p.offset});
    }
    s.attrs.set("dk", static_cast<int64_t>(f));
    s.attrs.set("dk_args", words);
    s.attrs.set("dk_ptrs", ptrs);
    const int64_t work = info.work(args);
    s.attrs.set("dk_work", work);
    // Tasks of a few thousand elements (a few hundred where each element is a dot product or a
    // window), so that a large operator spreads over the workers.
    const int64_t per_task = f == DkFamily::matmul || f == DkFamily::window ? 256 : 2048;
    s.attrs.set("dk_tasks",
                std::clamp<int64_t>((work + per_task - 1) / per_task, 1, kMaxTasksPerCall));
    KernelPlan k;
    k.name = fmt::format("k{}_{}", plan_.kernels.size(), sanitized(var));
    k.library = true;
    k.loop_steps.push_back(std::move(s));
    plan_.kernels.push_back(std::move(k));
  }

  static std::string sanitized(const std::string& var) {
    std::string out;
    for (char c : var) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return out.substr(0, 24);
  }

  void add_model_kernel(const TracedLaunch& l) {
    auto family = dk_family_by_name(l.kernel);
    WEFT_CHECK(family.has_value(), "traced launch of unknown kernel {}", l.kernel);
    const DkFamilyInfo& info = dk_family(*family);
    std::vector<Pointer> pointers;
    for (size_t i = 0; i < info.pointers.size(); ++i) {
      const void* p = nullptr;
      std::memcpy(&p, l.args.data() + info.pointers[i].offset, sizeof p);
      if (!p) continue;
      const auto [tensor, off] =
          locate(p, fmt::format("{} of {} ({})", info.pointers[i].name, info.name, l.var));
      pointers.push_back({i, tensor, off});
    }
    add_kernel_step(*family, l.args.data(), l.args.size(), l.op, l.var, pointers);
  }

  // A tensor of a µGraph's plan at `p`: the input itself when it is one as a whole, else a view
  // at its bytes of the workspace (an input viewed otherwise is copied there first).
  std::string view(const PlanBuffer& t, const void* p, const std::string& name) {
    const auto [tensor, off] = locate(p, name);
    const Region& r = region(tensor);
    if (r.input) {
      const PlanBuffer& in = *plan_.find_tensor(tensor);
      if (off == 0 && in.dtype == t.dtype && in.shape == t.shape &&
          in.contiguous_dim == t.contiguous_dim)
        return tensor;
      // Copied into bytes of its own, which the view then names.
      add_buffer(nullptr, t.bytes());
      const std::string copy = plan_.tensors.back().name;
      weft_dk_map_args a = flat_copy(t.dtype, t.dtype, numel(t.shape));
      add_kernel_step(DkFamily::map, &a, sizeof a, OpKind::reshape, name,
                      {{0, tensor, off}, {1, copy, 0}});
      return placed_view(t, name, region(copy).offset);
    }
    return placed_view(t, name, r.offset + off);
  }
  std::string placed_view(const PlanBuffer& t, const std::string& name, int64_t offset) {
    PlanBuffer b = t;
    b.name = name;
    b.role = TensorRole::temp;
    b.offset = offset;
    plan_.tensors.push_back(b);
    return name;
  }

  void add_ugraph(const TracedLaunch& l) {
    const ProgramPlan& up = l.program->plan();
    const std::string prefix = fmt::format("u{}_", ugraphs_++);
    std::map<std::string, std::string> renamed;
    for (const PlanBuffer& t : up.tensors) {
      const std::string name = prefix + t.name;
      if (t.role == TensorRole::input) {
        auto i = std::find(up.inputs.begin(), up.inputs.end(), t.name) - up.inputs.begin();
        renamed[t.name] = view(t, l.inputs.at(static_cast<size_t>(i)), name);
      } else if (t.role == TensorRole::output) {
        auto i = std::find(up.outputs.begin(), up.outputs.end(), t.name) - up.outputs.begin();
        renamed[t.name] = view(t, l.outputs.at(static_cast<size_t>(i)), name);
      } else {
        WEFT_CHECK(l.workspace && t.offset >= 0, "µGraph temp {} without workspace", t.name);
        renamed[t.name] = view(t, static_cast<const unsigned char*>(l.workspace) + t.offset, name);
      }
    }
    for (KernelPlan k : up.kernels) {
      k.name = prefix + k.name;
      for (auto* steps : {&k.loop_steps, &k.post_steps})
        for (Step& s : *steps) {
          if (s.kind == StepKind::load || s.kind == StepKind::call)
            for (std::string& n : s.inputs) n = renamed.at(n);
          if (s.kind == StepKind::store || s.kind == StepKind::call)
            for (std::string& n : s.outputs) n = renamed.at(n);
        }
      plan_.kernels.push_back(std::move(k));
    }
  }

  ProgramPlan plan_;
  std::vector<Region> regions_;
  int64_t workspace_ = 0;
  int buffers_ = 0;
  int ugraphs_ = 0;
};

// The traced buffers' workspace offsets, reusing bytes between buffers whose uses do not overlap
// in launch order (lower/interval_alloc.h), and the bytes they span. A buffer is live from the
// first launch that touches it to the last (the result copies after every launch); the tasks of
// launches sharing bytes are then ordered by the task graph's byte-level dependencies.
std::pair<std::vector<int64_t>, int64_t> buffer_offsets(
    const DeviceTrace& trace, const std::vector<NamedDeviceTensor>& outputs) {
  std::vector<LiveBuffer> live;
  std::map<const unsigned char*, size_t> by_start;
  for (size_t i = 0; i < trace.buffers.size(); ++i) {
    const DeviceBuffer& b = *trace.buffers[i];
    live.push_back({fmt::format("buf{}", i), std::max<int64_t>(b.bytes, 1), -1, -1});
    by_start[static_cast<const unsigned char*>(b.data)] = i;
  }
  auto touch = [&](const void* p, int at) {
    const auto* q = static_cast<const unsigned char*>(p);
    auto it = by_start.upper_bound(q);
    if (it == by_start.begin()) return;  // an input's bytes or the error flag
    --it;
    LiveBuffer& b = live[it->second];
    if (q >= it->first + b.bytes) return;
    if (b.begin < 0) b.begin = at;
    b.end = std::max(b.end, at);
  };
  for (size_t l = 0; l < trace.launches.size(); ++l) {
    const TracedLaunch& launch = trace.launches[l];
    const int at = static_cast<int>(l);
    if (launch.program) {
      for (const void* p : launch.inputs) touch(p, at);
      for (const void* p : launch.outputs) touch(p, at);
      if (launch.workspace) touch(launch.workspace, at);
      continue;
    }
    const DkFamilyInfo& f = dk_family(*dk_family_by_name(launch.kernel));
    for (const DkPointerField& field : f.pointers) {
      const void* p = nullptr;
      std::memcpy(&p, launch.args.data() + field.offset, sizeof p);
      if (p) touch(p, at);
    }
  }
  for (const NamedDeviceTensor& t : outputs)
    touch(t.tensor.data(), static_cast<int>(trace.launches.size()));
  for (LiveBuffer& b : live)
    if (b.begin < 0) b.begin = b.end = 0;  // allocated, never touched
  Allocation a = allocate_intervals(std::move(live), kAlign);
  std::vector<int64_t> offsets;
  for (const LiveBuffer& b : a.buffers) offsets.push_back(b.offset);
  return {offsets, a.peak};
}

}  // namespace

ProgramPlan megakernel_plan_from_trace(const DeviceTrace& trace,
                                       const std::vector<NamedDeviceTensor>& inputs,
                                       const std::vector<NamedDeviceTensor>& outputs,
                                       const std::string& name, const std::string& target) {
  if (!trace.host_fallbacks.empty()) {
    std::string ops;
    for (const auto& [op, count] : trace.host_fallbacks)
      ops += fmt::format("{}{} ({}x)", ops.empty() ? "" : ", ", op, count);
    throw UserError(fmt::format(
        "{}: one persistent kernel needs every operator on the device, but these ran on the host: "
        "{} (they have no device kernel at these shapes; run the model with `weft run DIR` "
        "instead){}",
        name, ops,
        trace.host_fallbacks.count("fused_conv")
            ? "; fused_conv is the CPU library's convolution with its epilogue: compile for a "
              "GPU (`weft compile MODEL --target h100`) or with `--no-fuse`"
            : ""));
  }
  PlanBuilder b(name, target);
  for (const NamedDeviceTensor& t : inputs) b.add_input(t);
  const auto [offsets, peak] = buffer_offsets(trace, outputs);
  b.reserve(peak);
  for (size_t i = 0; i < trace.buffers.size(); ++i)
    b.add_buffer(trace.buffers[i]->data, trace.buffers[i]->bytes, offsets[i]);
  b.add_buffer(trace.error_flag, sizeof(int64_t));
  for (const TracedLaunch& l : trace.launches) b.add_launch(l);
  for (const NamedDeviceTensor& t : outputs) b.add_output(t);
  return b.finish();
}

}  // namespace weft
