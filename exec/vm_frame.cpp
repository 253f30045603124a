// The host VM's call frames: the register program's instructions on host values (tensors in
// f64 stored in their dtypes, slots of the frame's planned storage) with the VM's memory
// accounting; the loop itself is exec/register_program.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "core/dtype_convert.h"
#include "core/system_memory.h"
#include "exec/register_program.h"
#include "exec/vm.h"
#include "sym/evaluate.h"

namespace weft {

void Vm::account(const VmValue& v, int sign) {
  const Tensor<double>* t = v.tensor();
  const Tensor<float>* f = v.tensor_f32();
  if (t || f) {
    const int64_t n = t ? t->numel() : f->numel();
    live_bytes_ += sign * n * 4;
    outside_bytes_ += sign * n * 4;
  } else if (const VmSlot* s = v.slot()) {
    live_bytes_ += sign * numel(s->shape) * 4;
  } else if (const VmTuple* tu = v.tuple()) {
    for (const VmValue& x : *tu) account(x, sign);
  }
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, live_bytes_);
  stats_.peak_planned_bytes = std::max(stats_.peak_planned_bytes, outside_bytes_ + storage_bytes_);
}

void Vm::account_storage(int64_t elements) {
  storage_bytes_ += elements * 4;
  stats_.peak_planned_bytes = std::max(stats_.peak_planned_bytes, outside_bytes_ + storage_bytes_);
}

namespace {

// Elements of a tensor of `dims` at `heap`, saturating; nullopt when a dim cannot be evaluated.
std::optional<int64_t> numel_at(const std::vector<SymExpr>& dims, const SymBinding& heap) {
  int64_t n = 1;
  for (const SymExpr& d : dims) {
    SymEvalResult v = try_evaluate(d, heap);
    if (!v.value || *v.value < 0) return std::nullopt;
    n = *v.value != 0 && n > std::numeric_limits<int64_t>::max() / 16 / *v.value
            ? std::numeric_limits<int64_t>::max() / 16
            : n * *v.value;
  }
  return n;
}

// "f32[batch, 64, 112, 112] = [4096, 64, 112, 112]; the dim that makes it big: batch = 4096":
// which of the symbolic dims is largest, so the message says what to shrink.
std::string shape_at(const MType& t, const SymBinding& heap) {
  std::vector<std::string> values;
  const SymExpr* biggest = nullptr;
  int64_t biggest_value = 0;
  for (const SymExpr& d : *t.dims) {
    SymEvalResult v = try_evaluate(d, heap);
    values.push_back(v.value ? std::to_string(*v.value) : "?");
    if (!d.is_constant() && v.value && *v.value > biggest_value) {
      biggest = &d;
      biggest_value = *v.value;
    }
  }
  std::string out = fmt::format("{} = [{}]", t.str(), fmt::join(values, ", "));
  if (biggest)
    out += fmt::format("; the dim that makes it big: {} = {}", biggest->str(), biggest_value);
  return out;
}

}  // namespace

bool Vm::fits(int64_t bytes) const {
  // Held bytes are counted as f32 and held as f64.
  return memory_limit_ <= 0 || bytes <= memory_limit_ - (storage_bytes_ + outside_bytes_) * 2;
}

void Vm::require_memory(int64_t bytes, const SourceLoc& loc,
                        const std::function<std::string()>& what) const {
  if (fits(bytes)) return;
  int64_t held = (storage_bytes_ + outside_bytes_) * 2;
  throw UserError(
      loc, fmt::format("{} needs {} of memory{}, more than the {} this process may use; run at "
                       "smaller shapes (or, for a model whose dims are bounded ahead of time, "
                       "lower the bound)",
                       what(), memory_str(bytes),
                       held > 0 ? fmt::format(" with {} already held", memory_str(held)) : "",
                       memory_str(memory_limit_)));
}

void Vm::require_memory_for(const Binding& b, const SymBinding& heap) const {
  if (memory_limit_ <= 0) return;
  if (b.type.is_tensor() && b.type.dims) {  // the common case, without a list of leaves
    if (std::optional<int64_t> n = numel_at(*b.type.dims, heap))
      require_memory(*n * int64_t{sizeof(double)}, b.loc,
                     [&] { return fmt::format("'{}' ({})", b.var, shape_at(b.type, heap)); });
    return;
  }
  std::vector<const MType*> leaves{&b.type};
  for (size_t i = 0; i < leaves.size(); ++i)
    for (const MType& f : leaves[i]->fields) leaves.push_back(&f);
  for (const MType* t : leaves) {
    if (!t->is_tensor() || !t->dims) continue;
    std::optional<int64_t> n = numel_at(*t->dims, heap);
    if (!n) continue;
    require_memory(*n * int64_t{sizeof(double)}, b.loc,
                   [&] { return fmt::format("'{}' ({})", b.var, shape_at(*t, heap)); });
  }
}

namespace {

// Whether rounding `data` to f32 changes an element: one branch-free pass (no early exit: the
// values usually hold and the scan runs to the end anyway). A NaN is kept as stored_value keeps it
// (x == x is false only for NaN).
bool f32_rounding_changes(const std::vector<double>& data) {
  bool changes = false;
  for (double x : data) changes |= (static_cast<double>(static_cast<float>(x)) != x) & (x == x);
  return changes;
}

// Values a tensor of `dtype` cannot hold exactly in the VM's doubles: an i64 beyond 2^53 is
// refused (`what` names the tensor), never rounded silently.
using Describe = std::function<std::string()>;

void require_exact(const std::vector<double>& data, DType dtype, const SourceLoc& loc,
                   const Describe& what) {
  if (dtype != DType::i64) return;
  for (size_t i = 0; i < data.size(); ++i)
    if (std::fabs(data[i]) > kExactIntegerLimit)
      throw UserError(loc,
                      fmt::format("{} is i64 and its element {} is {:.0f}, beyond 2^53: weft's "
                                  "VM holds integers exactly only up to 2^53",
                                  what(), i, data[i]));
}

// An argument for an integer or bool parameter must hold integers (0 or 1 for bool): the value
// is never truncated silently.
void require_integral(const std::vector<double>& data, DType dtype, const SourceLoc& loc,
                      const Describe& what) {
  if (!is_integer_dtype(dtype) && dtype != DType::boolean) return;
  for (size_t i = 0; i < data.size(); ++i)
    if (stored_value(data[i], dtype) != data[i])
      throw UserError(loc, fmt::format("{} is {}, but its element {} is {}, which {} does not hold "
                                       "(give it as that type)",
                                       what(), dtype_name(dtype), i, data[i], dtype_name(dtype)));
}

// The tensor `owner` holds rounded to `dtype`'s storage: itself, rounded in place where nothing
// else holds it (an operator's fresh tensor) or no element changes, else a rounded copy.
std::shared_ptr<const Tensor<double>> rounded(std::shared_ptr<const Tensor<double>> owner,
                                              DType dtype) {
  const Tensor<double>& t = *owner;
  // The VM makes its tensors as non-const objects behind const pointers, so this write is defined.
  if (owner.use_count() == 1) {
    auto& data = const_cast<Tensor<double>&>(t).data;
    if (dtype == DType::f32) {
      for (double& x : data) x = x == x ? static_cast<double>(static_cast<float>(x)) : x;
    } else {
      for (double& x : data) x = stored_value(x, dtype);
    }
    return owner;
  }
  const bool changes = dtype == DType::f32
                           ? f32_rounding_changes(t.data)
                           : std::any_of(t.data.begin(), t.data.end(), [&](double x) {
                               return !std::isnan(x) && stored_value(x, dtype) != x;
                             });
  if (!changes) return owner;
  auto copy = std::make_shared<Tensor<double>>(t);
  for (double& x : copy->data) x = stored_value(x, dtype);
  return copy;
}

// `v` as a value of `type` holds it: every tensor rounded to its dtype's storage (shared, not
// copied, where no element changes). Values that do not match the type are left for vm_match to
// report. `argument`: `v` is given to a parameter, whose integers must already be exact.
VmValue stored(VmValue v, const MType& type, const SourceLoc& loc, const Describe& what,
               bool argument = false) {
  if (v.tensor_f32() && type.is_tensor()) {
    if (type.dtype == DType::f32) return v;  // the f32 lane holds f32 values
    v = with_f64_tensors(v);
  }
  if (const Tensor<double>* t = v.tensor(); t && type.is_tensor()) {
    if (argument) require_integral(t->data, type.dtype, loc, what);
    auto& owner = std::get<std::shared_ptr<const Tensor<double>>>(v.v);
    owner = rounded(std::move(owner), type.dtype);
    require_exact(owner->data, type.dtype, loc, what);
    return v;
  }
  const VmTuple* tu = v.tuple();
  if (!tu || type.kind != MTypeKind::tuple || tu->size() != type.fields.size()) return v;
  auto out = std::make_shared<VmTuple>();
  for (size_t i = 0; i < tu->size(); ++i)
    out->push_back(stored((*tu)[i], type.fields[i], loc,
                          [&] { return fmt::format("{}, field {}", what(), i); }, argument));
  return VmValue{std::shared_ptr<const VmTuple>(std::move(out))};
}

}  // namespace

VmValue Vm::run(const std::string& name, const std::vector<VmValue>& args) {
  // The arguments as the parameters' dtypes store them (the callee's own values are stored at
  // each call's result); f32 ones in the f32 lane.
  const VmFunction& f = compiled(name);
  std::erase_if(f32_arguments_, [](const auto& e) { return e.second.given.expired(); });
  std::vector<VmValue> typed;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i >= f.fn->params.size()) {
      typed.push_back(args[i]);
      continue;
    }
    const MType& type = f.fn->params[i].type;
    const auto* given = std::get_if<std::shared_ptr<const Tensor<double>>>(&args[i].v);
    if (given && *given && type.is_tensor() && type.dtype == DType::f32) {
      // The weights come back run after run as the same tensors: converted once while they live.
      F32Argument& known = f32_arguments_[given->get()];
      if (known.given.lock() != *given) {
        const Tensor<double>& t = **given;
        known = {*given, std::make_shared<const Tensor<float>>(
                             t.shape, std::vector<float>(t.data.begin(), t.data.end()))};
      }
      typed.push_back(VmValue{known.lane});
      continue;
    }
    const Param& param = f.fn->params[i];
    typed.push_back(stored(
        args[i], type, param.loc, [&] { return fmt::format("parameter '{}'", param.name); }, true));
  }
  return with_f64_tensors(call_function(f, typed, 0));
}

namespace {

int64_t tensor_bytes(const VmValue& v) {
  if (const Tensor<double>* t = v.tensor()) return t->numel() * 4;
  if (const Tensor<float>* t = v.tensor_f32()) return t->numel() * 4;
  if (const VmSlot* s = v.slot()) return numel(s->shape) * 4;
  int64_t sum = 0;
  if (const VmTuple* tu = v.tuple())
    for (const VmValue& x : *tu) sum += tensor_bytes(x);
  return sum;
}

bool holds_slot(const VmValue& v) {
  if (v.slot()) return true;
  if (const VmTuple* tu = v.tuple())
    return std::any_of(tu->begin(), tu->end(), [](const VmValue& x) { return holds_slot(x); });
  return false;
}

// `v` with every tensor in planned storage copied out: what operators, callees and callers see.
VmValue resolve(const VmValue& v) {
  if (const VmSlot* s = v.slot(); s && s->f32) {
    auto t = std::make_shared<Tensor<float>>(s->shape, 0.0f);
    std::memcpy(t->data.data(), s->data(), t->data.size() * sizeof(float));
    return VmValue{std::shared_ptr<const Tensor<float>>(std::move(t))};
  }
  if (const VmSlot* s = v.slot()) {
    const auto* first = static_cast<const double*>(s->data());
    return VmValue{std::make_shared<Tensor<double>>(
        s->shape, std::vector<double>(first, first + numel(s->shape)))};
  }
  if (!holds_slot(v)) return v;
  auto tu = std::make_shared<VmTuple>();
  for (const VmValue& x : *v.tuple()) tu->push_back(resolve(x));
  return VmValue{std::shared_ptr<const VmTuple>(std::move(tu))};
}

// `v` with the tensor at `path` replaced by place(tensor).
template <class Place>
VmValue replace_leaf(const VmValue& v, const std::vector<int>& path, size_t depth, Place&& place) {
  if (depth == path.size()) {
    WEFT_CHECK(v.tensor() || v.tensor_f32(), "a planned allocation is not a tensor at run time");
    return place(v);
  }
  const VmTuple* tu = v.tuple();
  WEFT_CHECK(tu && static_cast<size_t>(path[depth]) < tu->size(), "bad planned path");
  auto copy = std::make_shared<VmTuple>(*tu);
  (*copy)[static_cast<size_t>(path[depth])] =
      replace_leaf((*tu)[static_cast<size_t>(path[depth])], path, depth + 1, place);
  return VmValue{std::shared_ptr<const VmTuple>(std::move(copy))};
}

// A frame's planned storage; returns its bytes to the VM's count when the frame ends.
struct FrameStorage {
  std::vector<std::shared_ptr<std::vector<double>>> buffers;  // per storage of the plan
  std::vector<int64_t> base, capacity;                        // elements
  std::vector<int64_t> written;                               // per allocation: its elements
  int64_t elements = 0;
  int64_t produced = 0;                             // f32 bytes of the tensors the frame produced
  std::function<void(int64_t, int64_t)> give_back;  // (elements, produced) at the frame's end
  std::vector<std::shared_ptr<std::vector<double>>>* arena_pool = nullptr;  // static plans
  ~FrameStorage() {
    if (give_back) give_back(elements, produced);
    if (arena_pool && !buffers.empty() && buffers[0]) arena_pool->push_back(buffers[0]);
  }
};

// A reshape's result as a view of its operand `x` (no copy) at the binding's type; nullopt where
// the type has no fixed shape at `heap` or its size differs (the copying path reports that).
std::optional<VmValue> reshaped_view(const VmValue& x, const Binding& b, const SymBinding& heap) {
  std::optional<TensorType> type = tensor_type_at(b.type, heap);
  if (!type) return std::nullopt;
  VmSlot view;
  if (const VmSlot* s = x.slot()) {
    view = *s;
  } else if (auto* p = std::get_if<std::shared_ptr<const Tensor<float>>>(&x.v)) {
    view = VmSlot{nullptr, 0, (*p)->shape, true, *p, (*p)->data.data()};
  } else if (auto* p = std::get_if<std::shared_ptr<const Tensor<double>>>(&x.v)) {
    view = VmSlot{nullptr, 0, (*p)->shape, false, *p, (*p)->data.data()};
  } else {
    return std::nullopt;
  }
  if (numel(view.shape) != numel(type->shape)) return std::nullopt;
  view.shape = std::move(type->shape);
  return VmValue{std::move(view)};
}

}  // namespace

// A call's frame: registers hold host tensors, tuples, integers or slots of the frame's planned
// storage; each call's result is stored in its dtype and placed where the plan puts it.
class Vm::Frame {
 public:
  using Value = VmValue;

  Frame(Vm& vm, const VmFunction& f, int depth) : vm_(vm), f_(f), depth_(depth) {
    storage_.give_back = [&vm](int64_t elements, int64_t produced) {
      vm.account_storage(-elements);
      vm.naive_bytes_ -= produced;
    };
    if (f.plan) {
      storage_.buffers.resize(f.plan->storages.size());
      storage_.base.assign(f.plan->storages.size(), 0);
      storage_.capacity.assign(f.plan->storages.size(), 0);
      storage_.written.assign(f.plan->allocs.size(), 0);
    }
  }

  void match(const MType& type, const VmValue& v, SymBinding& heap, const std::string& what,
             const SourceLoc& loc) {
    vm_match(type, v, heap, what, loc);
  }
  void step() { ++vm_.stats_.instructions; }
  void alloc(const VmInstr& in, const SymBinding& heap);
  void alloc_storage(size_t s, const SymBinding& heap);
  bool arena_pays(const SymBinding& heap) const;
  std::string storage_what(size_t s, const SymBinding& heap) const;
  void release(const VmInstr& in);
  VmValue call(const VmInstr& in, const std::vector<VmValue>& regs, const SymBinding& heap);
  void hold(int reg, const VmValue& v) {
    if (fresh(reg)) vm_.account(v, 1);
  }
  void drop(int reg, const VmValue& v, bool live) {
    ++vm_.stats_.frees;
    if (fresh(reg) && live) vm_.account(v, -1);
  }
  // The arm may yield a value of the enclosing frame's storage: the if's result is owned.
  VmValue moved(const VmValue& v) { return resolve(v); }
  VmValue returned(int reg, const VmValue& v) {
    VmValue result = resolve(v);
    if (fresh(reg)) vm_.account(v, -1);
    return result;
  }

 private:
  bool fresh(int reg) const { return f_.fresh[static_cast<size_t>(reg)]; }
  double fill() const {
    // A NaN whose two halves are f32 NaNs too, so f32 slots are poisoned as well.
    return vm_.options_.poison ? std::bit_cast<double>(uint64_t{0xFFF80000FFF80000}) : 0.0;
  }
  std::shared_ptr<std::vector<double>> new_buffer(int64_t elements,
                                                  const std::function<std::string()>& what) {
    vm_.require_memory(elements * int64_t{sizeof(double)}, f_.fn->loc, what);
    storage_.elements += elements;
    vm_.account_storage(elements);
    return std::make_shared<std::vector<double>>(static_cast<size_t>(elements), fill());
  }

  Vm& vm_;
  const VmFunction& f_;
  const int depth_;
  FrameStorage storage_;
};

std::string Vm::Frame::storage_what(size_t s, const SymBinding& heap) const {
  const FunctionPlan& plan = *f_.plan;
  for (const PlannedAlloc& a : plan.allocs) {
    if (a.storage != static_cast<int>(s)) continue;
    for (const VmInstr& in : f_.code) {
      if (in.op != VmOpcode::call || in.index != a.binding) continue;
      const MType* t = &in.binding->type;
      for (int field : a.path) t = &t->fields.at(static_cast<size_t>(field));
      if (t->is_tensor() && t->dims)
        return fmt::format("'{}' ({}), in storage s{} of '{}'", a.var, shape_at(*t, heap), s,
                           plan.function);
    }
    return fmt::format("'{}' in storage s{} of '{}' ({} bytes at {})", a.var, s, plan.function,
                       plan.storages[s].bytes.str(), binding_str(heap));
  }
  return fmt::format("storage s{} of '{}'", s, plan.function);
}

void Vm::Frame::alloc_storage(size_t s, const SymBinding& heap) {
  int64_t elements = evaluate(f_.plan->storages[s].bytes, heap) / 8;
  storage_.buffers[s] = new_buffer(elements, [&] { return storage_what(s, heap); });
  storage_.base[s] = 0;
  storage_.capacity[s] = elements;
}

// The arena is sized by the variables' bounds; a call at shapes far below them (a model bounded
// at 4096 tokens run on 7), or one whose arena would not fit in memory, sizes each storage at
// its binding instead, as a symbolic plan does.
bool Vm::Frame::arena_pays(const SymBinding& heap) const {
  const FunctionPlan& plan = *f_.plan;
  int64_t needed = 0;
  for (const PlannedStorage& st : plan.storages) {
    // A size over a variable the body binds later (match_cast) is known only then: the arena.
    SymEvalResult v = try_evaluate(st.bytes, heap);
    if (!v.value) return true;
    needed += *v.value;
  }
  return plan.arena_bytes <= 2 * needed + (int64_t{1} << 20) && vm_.fits(plan.arena_bytes);
}

void Vm::Frame::alloc(const VmInstr& in, const SymBinding& heap) {
  const FunctionPlan& plan = *f_.plan;
  if (in.index < 0 && !arena_pays(heap)) {
    for (size_t s = 0; s < plan.storages.size(); ++s) alloc_storage(s, heap);
  } else if (in.index < 0) {  // the static arena: every storage at its offset
    std::shared_ptr<std::vector<double>> arena;
    auto& pool = vm_.arenas_[&f_];
    if (pool.empty()) {
      arena = new_buffer(plan.arena_bytes / 8, [&] {
        return fmt::format("the memory plan of '{}' (one arena for the variables' bounds)",
                           plan.function);
      });
    } else {
      arena = std::move(pool.back());
      pool.pop_back();
      storage_.elements += plan.arena_bytes / 8;
      vm_.account_storage(plan.arena_bytes / 8);
      if (vm_.options_.poison) std::fill(arena->begin(), arena->end(), fill());
    }
    storage_.arena_pool = &pool;
    for (size_t s = 0; s < plan.storages.size(); ++s) {
      storage_.buffers[s] = arena;
      storage_.base[s] = plan.storages[s].offset / 8;
      storage_.capacity[s] = *plan.storages[s].upper / 8;
    }
  } else {
    alloc_storage(static_cast<size_t>(in.index), heap);
  }
}

void Vm::Frame::release(const VmInstr& in) {
  if (!vm_.options_.poison) return;
  const PlannedAlloc& a = f_.plan->allocs[static_cast<size_t>(in.index)];
  auto s = static_cast<size_t>(a.storage);
  auto first = storage_.buffers[s]->begin() + storage_.base[s];
  std::fill(first, first + storage_.written[static_cast<size_t>(in.index)], fill());
}

VmValue Vm::Frame::call(const VmInstr& in, const std::vector<VmValue>& regs,
                        const SymBinding& heap) {
  // Tuples and items alias their operands (slots included); operators and µGraphs read slots in
  // place (the slot lives until the call returns); callees read copies.
  const CallKind kind = in.binding->call.kind;
  const bool aliasing = kind == CallKind::tuple || kind == CallKind::item || kind == CallKind::op ||
                        kind == CallKind::lib || kind == CallKind::ugraph;
  ++vm_.stats_.calls;
  if (in.view)
    if (std::optional<VmValue> view =
            reshaped_view(regs[static_cast<size_t>(in.args.at(0))], *in.binding, heap))
      return *std::move(view);
  std::vector<VmValue> resolved;
  std::vector<const VmValue*> operands;
  if (!aliasing) {
    for (int a : in.args) resolved.push_back(resolve(regs[static_cast<size_t>(a)]));
    for (const VmValue& v : resolved) operands.push_back(&v);
  } else {
    for (int a : in.args) operands.push_back(&regs[static_cast<size_t>(a)]);
  }
  if (in.binding->call.kind != CallKind::func) vm_.require_memory_for(*in.binding, heap);
  // Each operator computes in f32 or wider and stores its result in the result's dtype
  // (a function's result is stored by the callee's own calls).
  bool in_f32 = false;
  // An f32 tensor result with planned storage is written there by the f32 lane's paths.
  std::optional<VmSlot> place;
  int64_t capacity = 0;
  int planned = -1;
  if (f_.plan && in.index >= 0 && in.binding->type.is_tensor() &&
      in.binding->type.dtype == DType::f32)
    for (int k : f_.binding_allocs[static_cast<size_t>(in.index)]) {
      const PlannedAlloc& a = f_.plan->allocs[static_cast<size_t>(k)];
      if (a.placement != AllocPlacement::storage || !a.path.empty()) continue;
      auto s = static_cast<size_t>(a.storage);
      place = VmSlot{storage_.buffers[s], storage_.base[s], {}, true, nullptr, nullptr};
      capacity = storage_.capacity[s];
      planned = k;
    }
  const ChannelsLast layout = in.index >= 0 && !f_.channels_last.empty()
                                  ? f_.channels_last[static_cast<size_t>(in.index)]
                                  : 0;
  VmValue out = vm_.execute(*in.binding, operands, heap, depth_, &in_f32, place ? &*place : nullptr,
                            capacity, layout);
  const VmSlot* written_in_place = out.slot();
  if (written_in_place && planned >= 0)
    storage_.written[static_cast<size_t>(planned)] = (numel(written_in_place->shape) + 1) / 2;
  if (fresh(in.reg) && in.binding->call.kind != CallKind::func &&
      !(in_f32 && in.binding->type.every_tensor([](DType d) { return d == DType::f32; })))
    out = stored(std::move(out), in.binding->type, in.binding->loc,
                 [&] { return fmt::format("'{}'", in.binding->var); });
  if (fresh(in.reg)) {
    int64_t bytes = tensor_bytes(out);
    vm_.stats_.total_alloc_bytes += bytes;
    storage_.produced += bytes;
    vm_.naive_bytes_ += bytes;
    vm_.stats_.peak_naive_bytes = std::max(vm_.stats_.peak_naive_bytes, vm_.naive_bytes_);
  }
  if (f_.plan && in.index >= 0)
    for (int k : f_.binding_allocs[static_cast<size_t>(in.index)]) {
      const PlannedAlloc& a = f_.plan->allocs[static_cast<size_t>(k)];
      if (a.placement != AllocPlacement::storage || (written_in_place && k == planned)) continue;
      auto s = static_cast<size_t>(a.storage);
      out = replace_leaf(out, a.path, 0, [&](const VmValue& leaf) {
        const Tensor<double>* t = leaf.tensor();
        const Tensor<float>* t32 = leaf.tensor_f32();
        const int64_t n = t ? t->numel() : t32->numel();
        const int64_t doubles = t ? n : (n + 1) / 2;  // an f32 tensor's floats packed
        WEFT_CHECK(doubles <= storage_.capacity[s],
                   "{}: {} elements planned into storage s{} of {}", a.var, n, s,
                   storage_.capacity[s]);
        double* place = storage_.buffers[s]->data() + storage_.base[s];
        if (t)
          std::copy(t->data.begin(), t->data.end(), place);
        else
          std::memcpy(place, t32->data.data(), static_cast<size_t>(n) * sizeof(float));
        storage_.written[static_cast<size_t>(k)] = doubles;
        return VmValue{VmSlot{storage_.buffers[s], storage_.base[s], t ? t->shape : t32->shape, !t,
                              nullptr, nullptr}};
      });
    }
  return out;
}

VmValue Vm::call_function(const VmFunction& f, const std::vector<VmValue>& args, int depth) {
  Frame frame(*this, f, depth);
  return run_register_program(f, args, depth, frame);
}

}  // namespace weft
