// The ONNX converters of shapes and data movement (reshape, transpose, concat, split, slice,
// gather, casts, constants, shape arithmetic), with their rows of the converter table.
#ifdef WEFT_HAVE_ONNX
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "core/dtype_convert.h"
#include "ir/cast.h"
#include "model/model_ops.h"
#include "onnx/convert_common.h"

namespace weft::onnx_import {
namespace {

void convert_shape(I& imp) {
  const Value& v = imp.in(0);
  std::vector<SymExpr> d;
  if (v.kind == VKind::runtime) {
    d = imp.dims(v.name);
  } else {
    for (int64_t s : folded_shape(v)) d.emplace_back(s);
  }
  auto n = static_cast<int64_t>(d.size());
  int64_t start = imp.attr_int("start", 0), end = imp.attr_int("end", n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  imp.out(0, dims_value(std::vector<SymExpr>(d.begin() + start, d.begin() + end), false));
}

void convert_reshape(I& imp) {
  const Value& v = imp.in(0);
  auto target = imp.ints_input(1, "shape");
  bool allowzero = imp.attr_int("allowzero", 0) != 0;
  std::vector<SymExpr> in = v.kind == VKind::runtime ? imp.dims(v.name) : syms(folded_shape(v));
  std::vector<SymExpr> out(target.size());
  int infer = -1;
  std::vector<SymExpr> num = in, den;
  for (size_t i = 0; i < target.size(); ++i) {
    auto c = target[i].as_constant();
    if (c == -1) {
      if (infer >= 0) imp.fail("the shape has more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    if (c == 0 && !allowzero) {
      if (i >= in.size())
        imp.fail(fmt::format("shape entry {} is 0 but the input has rank {}", i, in.size()));
      out[i] = in[i];
    } else {
      if (c && *c < 0) imp.fail(fmt::format("shape entry {} is {}", i, *c));
      out[i] = target[i];
    }
    // Cancel equal factors so the -1 stays a simple expression (floordiv(b * n * 64, b * n)).
    auto it = std::find(num.begin(), num.end(), out[i]);
    if (it != num.end())
      num.erase(it);
    else
      den.push_back(out[i]);
  }
  if (infer >= 0) {
    SymExpr n = product(num, 0, num.size()), dd = product(den, 0, den.size());
    if (dd == SymExpr(0)) imp.fail("cannot infer a -1 next to a 0 dim");
    out[static_cast<size_t>(infer)] = dd == SymExpr(1) ? n : floordiv(n, dd);
  }
  imp.out(0, reshape_value(imp, v, out));
}

void convert_flatten(I& imp) {
  const Value& v = imp.in(0);
  std::vector<SymExpr> d = v.kind == VKind::runtime ? imp.dims(v.name) : syms(folded_shape(v));
  int r = static_cast<int>(d.size());
  int64_t a = imp.attr_int("axis", 1);
  if (a < -r || a > r) imp.fail(fmt::format("axis {} is out of range for rank {}", a, r));
  if (a < 0) a += r;
  auto ua = static_cast<size_t>(a);
  imp.out(0, reshape_value(imp, v, {product(d, 0, ua), product(d, ua, d.size())}));
}

// Unsqueeze and Squeeze: axes from the attribute (before opset 13) or the second input.
std::optional<std::vector<int64_t>> axes_of(I& imp) {
  if (imp.opset() >= 13) {
    if (!imp.has_input(1)) return std::nullopt;
    return imp.const_ints_input(1, "axes");
  }
  return imp.attr_ints("axes");
}

void convert_unsqueeze(I& imp) {
  const Value& v = imp.in(0);
  std::vector<SymExpr> d = v.kind == VKind::runtime ? imp.dims(v.name) : syms(folded_shape(v));
  auto axes = axes_of(imp);
  if (!axes) imp.fail("Unsqueeze needs axes");
  int r = static_cast<int>(d.size() + axes->size());
  std::set<int64_t> at;
  for (int64_t a : *axes) at.insert(imp.axis(a, r));
  if (at.size() != axes->size()) imp.fail("Unsqueeze axes repeat");
  std::vector<SymExpr> out;
  size_t k = 0;
  for (int i = 0; i < r; ++i) out.push_back(at.count(i) ? SymExpr(1) : d[k++]);
  imp.out(0, reshape_value(imp, v, out));
}

void convert_squeeze(I& imp) {
  const Value& v = imp.in(0);
  std::vector<SymExpr> d = v.kind == VKind::runtime ? imp.dims(v.name) : syms(folded_shape(v));
  int r = static_cast<int>(d.size());
  auto axes = axes_of(imp);
  std::set<int64_t> drop;
  if (axes && !axes->empty()) {
    for (int64_t a : *axes) drop.insert(imp.axis(a, r));
  } else {
    for (int i = 0; i < r; ++i)
      if (d[static_cast<size_t>(i)] == SymExpr(1)) drop.insert(i);
  }
  std::vector<SymExpr> out;
  for (int i = 0; i < r; ++i) {
    if (!drop.count(i))
      out.push_back(d[static_cast<size_t>(i)]);
    else if (!(d[static_cast<size_t>(i)] == SymExpr(1)))
      imp.fail(fmt::format("cannot squeeze dim {} of size {}", i, d[static_cast<size_t>(i)].str()));
  }
  imp.out(0, reshape_value(imp, v, out));
}

void convert_transpose(I& imp) {
  std::string x = imp.rt(0);
  int r = imp.rank(x);
  auto perm = imp.attr_ints("perm");
  std::vector<SymExpr> p;
  if (perm) {
    for (int64_t a : *perm) p.emplace_back(a);
  } else {
    for (int i = r - 1; i >= 0; --i) p.emplace_back(i);
  }
  imp.out(0, imp.op("permute", {x}, {{"perm", p}}));
}

void convert_concat(I& imp) {
  int n = imp.num_inputs();
  bool folded = true;
  std::vector<SymExpr> all;
  for (int i = 0; i < n && folded; ++i) {
    const Value& v = imp.in(i);
    auto ints = imp.ints_of(v);
    folded =
        ints && folded_shape(v).size() == 1 && (v.kind == VKind::dims || is_integer_type(v.elem));
    if (folded) all.insert(all.end(), ints->begin(), ints->end());
  }
  if (folded) {
    imp.out(0, dims_value(all, false));
    return;
  }
  std::vector<std::string> args;
  for (int i = 0; i < n; ++i) {
    std::string a = imp.rt(i);
    // Empty operands (a dim of 0) add nothing.
    auto d = imp.dims(a);
    bool empty = false;
    for (const SymExpr& s : d) empty = empty || s == SymExpr(0);
    if (!empty) args.push_back(a);
  }
  if (args.empty()) imp.fail("Concat of empty tensors only");
  int64_t a = imp.axis(imp.attr_int("axis", 0), imp.rank(args[0]));
  if (args.size() == 1) {
    Value only;
    only.name = args[0];
    only.type = imp.type_of(args[0]);
    imp.out(0, only);
    return;
  }
  imp.out(0, imp.op("concat", args, dim_attr(a)));
}

void convert_split(I& imp) {
  std::string x = imp.rt(0);
  int r = imp.rank(x);
  int64_t a = imp.axis(imp.attr_int("axis", 0), r);
  auto d = imp.dims(x);
  SymExpr len = d[static_cast<size_t>(a)];
  int outs = imp.node().output_size();
  std::vector<SymExpr> sizes;
  if (imp.opset() >= 13 && imp.has_input(1)) {
    sizes = imp.ints_input(1, "split");
  } else if (auto s = imp.attr_ints("split"); imp.opset() < 13 && s) {
    sizes = syms(*s);
  }
  if (sizes.empty()) {
    int64_t parts = imp.attr_int("num_outputs", outs);
    if (parts < 1 || parts > 64) imp.fail(fmt::format("cannot split into {} parts", parts));
    auto c = len.as_constant();
    if (c && *c % parts != 0) {  // opset 18: the last part is smaller
      int64_t each = (*c + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i) sizes.emplace_back(std::min(each, *c - i * each));
    } else {
      Value t = imp.op("split", {x}, {{"dim", SymExpr(a)}, {"parts", SymExpr(parts)}});
      for (int i = 0; i < outs; ++i)
        imp.out(i, imp.emit(CallKind::item, "", {t.name}, {{"index", SymExpr(i)}}));
      return;
    }
  }
  if (static_cast<int>(sizes.size()) != outs)
    imp.fail(fmt::format("{} split sizes for {} outputs", sizes.size(), outs));
  SymExpr start(0);
  for (int i = 0; i < outs; ++i) {
    imp.out(
        i,
        imp.op("slice", {x},
               {{"dim", SymExpr(a)}, {"start", start}, {"size", sizes[static_cast<size_t>(i)]}}));
    start = start + sizes[static_cast<size_t>(i)];
  }
}

// One axis of Slice: start and end normalized against the dim `d` (clamped where d is known).
std::pair<SymExpr, SymExpr> slice_range(const SymExpr& s0, const SymExpr& e0, const SymExpr& d) {
  constexpr int64_t kBig = int64_t{1} << 40;
  auto norm = [&](const SymExpr& v) -> SymExpr {
    auto c = v.as_constant();
    if (!c) return v;
    if (*c >= kBig) return d;
    if (*c <= -kBig) return SymExpr(0);
    SymExpr out = *c < 0 ? d + v : v;
    if (auto dc = d.as_constant()) {
      int64_t o = *out.as_constant();
      return SymExpr(std::clamp<int64_t>(o, 0, *dc));
    }
    return out;
  };
  SymExpr s = norm(s0), e = norm(e0);
  if (auto sc = s.as_constant(), ec = e.as_constant(); sc && ec && *ec < *sc) e = s;
  return {s, e};
}

void convert_slice(I& imp) {
  const Value& v = imp.in(0);
  std::vector<SymExpr> starts, ends;
  std::vector<int64_t> axes, steps;
  if (imp.opset() < 10) {
    starts = syms(imp.attr_ints("starts").value_or(std::vector<int64_t>{}));
    ends = syms(imp.attr_ints("ends").value_or(std::vector<int64_t>{}));
    if (auto a = imp.attr_ints("axes")) axes = *a;
  } else {
    starts = imp.ints_input(1, "starts");
    ends = imp.ints_input(2, "ends");
    if (imp.has_input(3)) axes = imp.const_ints_input(3, "axes");
    if (imp.has_input(4)) steps = imp.const_ints_input(4, "steps");
  }
  if (starts.size() != ends.size()) imp.fail("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    imp.fail("starts, ends, axes and steps differ in length");
  // A shape vector is sliced now (Shape -> Slice chains) when its bounds are known; otherwise
  // (positions 0..seq of a constant table, say) it is sliced at run time below.
  if (v.kind != VKind::runtime && folded_shape(v).size() == 1 && imp.ints_of(v) &&
      starts.size() == 1 && steps[0] == 1) {
    auto vals = *imp.ints_of(v);
    auto n = static_cast<int64_t>(vals.size());
    auto [s, e] = slice_range(starts[0], ends[0], SymExpr(n));
    auto sc = s.as_constant(), ec = e.as_constant();
    if (sc && ec) {
      imp.out(0, dims_value(std::vector<SymExpr>(vals.begin() + *sc, vals.begin() + *ec), false));
      return;
    }
  }
  std::string x = imp.runtime(v).first;
  int r = imp.rank(x);
  if (std::any_of(steps.begin(), steps.end(), [](int64_t st) { return st != 1; })) {
    if (std::find(steps.begin(), steps.end(), 0) != steps.end()) imp.fail("a Slice step of 0");
    imp.out(
        0,
        imp.op("slice_steps", {x},
               {{"starts", starts}, {"ends", ends}, {"axes", syms(axes)}, {"steps", syms(steps)}}));
    return;
  }
  std::string cur = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = imp.axis(axes[i], r);
    SymExpr d = imp.dims(cur)[static_cast<size_t>(a)];
    auto [s, e] = slice_range(starts[i], ends[i], d);
    if (s == SymExpr(0) && e == d) continue;
    cur = imp.op("slice", {cur}, {{"dim", SymExpr(a)}, {"start", s}, {"size", e - s}}).name;
  }
  Value out;
  out.kind = VKind::runtime;
  out.name = cur;
  out.type = imp.type_of(cur);
  imp.out(0, out);
}

void convert_gather(I& imp) {
  const Value& data = imp.in(0);
  const Value& idx = imp.in(1);
  auto idx_ints = imp.ints_of(idx);
  // Gathering from a shape vector (Shape -> Gather) folds.
  if (data.kind != VKind::runtime && folded_shape(data).size() == 1 && imp.ints_of(data) &&
      idx_ints && folded_shape(idx).size() <= 1) {
    auto vals = *imp.ints_of(data);
    std::vector<SymExpr> out;
    for (const SymExpr& i : *idx_ints) {
      auto c = i.as_constant();
      auto n = static_cast<int64_t>(vals.size());
      if (!c || *c < -n || *c >= n)
        imp.fail(fmt::format("index {} out of range for {} values", i.str(), n));
      out.push_back(vals[static_cast<size_t>(*c < 0 ? *c + n : *c)]);
    }
    imp.out(0, dims_value(out, folded_shape(idx).empty()));
    return;
  }
  std::string x = imp.runtime(data).first;
  int r = imp.rank(x);
  int64_t a = imp.axis(imp.attr_int("axis", 0), r);
  auto d = imp.dims(x);
  // A constant scalar index is a slice of size 1 with the dim dropped.
  if (idx.kind == VKind::constant && idx.data.shape.empty() && idx_ints) {
    SymExpr i = (*idx_ints)[0];
    if (auto c = i.as_constant(); c && *c < 0) i = d[static_cast<size_t>(a)] + i;
    Value s = imp.op("slice", {x}, {{"dim", SymExpr(a)}, {"start", i}, {"size", SymExpr(1)}});
    d.erase(d.begin() + a);
    imp.out(0, imp.op("reshape", {s.name}, {{"shape", d}}));
    return;
  }
  std::string ids = imp.runtime(idx).first;
  imp.out(0, imp.op("gather", {x, ids}, {{"axis", SymExpr(a)}}));
}

// Value `v` as ONNX type `to` (Cast's semantics); the result is the node's output 0.
void cast_to(I& imp, const Value& v, int to) {
  const CastTarget* target = cast_target(to);
  if (!target) imp.fail(fmt::format("Cast to ONNX type {} is not supported", to));
  if (v.kind == VKind::constant) {
    Value c = v;
    c.name.clear();
    c.elem = to;
    for (double& x : c.data.data) x = cast_scalar(x, target->kind, target->bits);
    imp.out(0, c);
    return;
  }
  if (v.kind == VKind::dims) {
    // Shape arithmetic stays symbolic while integral; cast to a float type, the values are
    // materialized in that type where they are used as a tensor.
    Value c = v;
    c.elem = to;
    imp.out(0, c);
    return;
  }
  if (to == TensorProto::FLOAT16 || to == TensorProto::BFLOAT16) {
    // Imported models compute in f32 (docs/onnx.md): the values round to the narrower type,
    // then travel as f32 again, so every operator after it sees one dtype.
    const Value narrow = imp.op("cast", {v.name}, {{"to", SymExpr(to)}});
    Value wide = imp.op("cast", {narrow.name}, {{"to", SymExpr(int64_t{TensorProto::FLOAT})}});
    wide.elem = to;
    imp.out(0, wide);
    return;
  }
  if (to == TensorProto::UINT16 || to == TensorProto::UINT32 || to == TensorProto::UINT64) {
    // No dtype of their own: the cast wraps as the type does and the result is i64.
    Value c = imp.op("cast", {v.name}, {{"to", SymExpr(to)}});
    c.elem = to;
    imp.out(0, c);
    return;
  }
  imp.out(0, imp.as_elem(v, to));
}

void convert_cast(I& imp) {
  cast_to(imp, imp.in(0), static_cast<int>(imp.attr_int("to", TensorProto::FLOAT)));
}

// CastLike(x, like): Cast to like's type (like's values are not read).
void convert_castlike(I& imp) {
  cast_to(imp, imp.in(0), imp.in(1).elem);
}

void convert_expand(I& imp) {
  auto shape = imp.ints_input(1, "shape");
  std::string x = imp.rt(0);
  int r = std::max(imp.rank(x), static_cast<int>(shape.size()));
  x = imp.to_rank(x, r);
  shape.insert(shape.begin(), static_cast<size_t>(r) - shape.size(), SymExpr(1));
  auto d = imp.dims(x);
  for (int i = 0; i < r; ++i) {
    const SymExpr& want = shape[static_cast<size_t>(i)];
    if (d[static_cast<size_t>(i)] == SymExpr(1) && !(want == SymExpr(1)))
      x = imp.op("repeat", {x}, {{"dim", SymExpr(i)}, {"times", want}}).name;
  }
  Value out;
  out.kind = VKind::runtime;
  out.name = x;
  out.type = imp.type_of(x);
  imp.out(0, out);
}

void convert_tile(I& imp) {
  std::string x = imp.rt(0);
  auto reps = imp.ints_input(1, "repeats");
  if (static_cast<int>(reps.size()) != imp.rank(x))
    imp.fail(fmt::format("{} repeats for a tensor of rank {}", reps.size(), imp.rank(x)));
  for (size_t i = 0; i < reps.size(); ++i)
    if (!(reps[i] == SymExpr(1)))
      x = imp.op("repeat", {x}, {{"dim", SymExpr(static_cast<int64_t>(i))}, {"times", reps[i]}})
              .name;
  Value out;
  out.name = x;
  out.type = imp.type_of(x);
  imp.out(0, out);
}

void convert_range(I& imp) {
  std::vector<SymExpr> v[3];
  for (int i = 0; i < 3; ++i) {
    auto ints = imp.ints_of(imp.in(i));
    if (!ints || ints->size() != 1)
      imp.fail(fmt::format("Range input {} must be a known integer scalar", i));
    v[i] = *ints;
  }
  auto start = v[0][0].as_constant(), limit = v[1][0].as_constant(), delta = v[2][0].as_constant();
  if (!start || !delta || *delta == 0)
    imp.fail("Range needs a constant start and a nonzero constant delta");
  if (limit) {
    std::vector<SymExpr> out;
    for (int64_t x = *start; *delta > 0 ? x < *limit : x > *limit; x += *delta) {
      out.emplace_back(x);
      if (out.size() > (size_t{1} << 20)) imp.fail("a Range too long to fold");
    }
    Value c = dims_value(out, false);
    if (c.kind == VKind::constant)
      c.elem = imp.in(0).kind == VKind::constant ? imp.in(0).elem : TensorProto::INT64;
    imp.out(0, c);
    return;
  }
  const Value r = imp.op("range", {}, {{"start", v[0][0]}, {"limit", v[1][0]}, {"delta", v[2][0]}});
  imp.out(0, imp.as_elem(r, imp.in(0).elem));
}

void convert_pad(I& imp) {
  std::string mode = imp.attr_string("mode", "constant");
  if (mode != "constant") imp.fail(fmt::format("Pad mode '{}' (constant only)", mode));
  std::string x = imp.rt(0);
  std::vector<SymExpr> pads;
  double value = 0;
  if (imp.opset() < 11) {
    pads = syms(imp.attr_ints("pads").value_or(std::vector<int64_t>{}));
    value = imp.attr_float("value", 0.0);
  } else {
    pads = imp.ints_input(1, "pads");
    if (imp.has_input(2)) {
      const Value& c = imp.in(2);
      if (c.kind != VKind::constant || c.data.numel() != 1)
        imp.fail("Pad's constant_value must be a known scalar");
      value = c.data.data[0];
    }
    if (imp.has_input(3)) imp.fail("Pad with axes is not supported");
  }
  imp.out(0, imp.op("pad", {x},
                    {{"pads", pads}, {"value", rational_attr(imp, value, "the pad value")}}));
}

// A Constant node's or ConstantOfShape's tensor attribute.
Value tensor_attr(const AttributeProto& a) {
  return constant_value(tensor_from_proto(a.t(), SourceLoc{}, "the tensor attribute"),
                        a.t().data_type());
}

void convert_constant(I& imp) {
  const AttributeProto* a = nullptr;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"})
    if ((a = imp.attr(name))) break;
  if (!a) imp.fail("Constant without a value, value_float(s) or value_int(s) attribute");
  if (a->name() == "value") {
    try {
      imp.out(0, tensor_attr(*a));
    } catch (const UserError& e) {
      imp.fail(e.message());
    }
  } else if (a->name() == "value_float") {
    imp.out(0, constant_value(Tensor<double>(Shape{}, a->f()), TensorProto::FLOAT));
  } else if (a->name() == "value_floats") {
    std::vector<double> v(a->floats().begin(), a->floats().end());
    imp.out(0, constant_value(Tensor<double>(Shape{static_cast<int64_t>(v.size())}, v),
                              TensorProto::FLOAT));
  } else if (a->name() == "value_int") {
    imp.out(0, constant_value(Tensor<double>(Shape{}, static_cast<double>(a->i())),
                              TensorProto::INT64));
  } else {
    std::vector<double> v(a->ints().begin(), a->ints().end());
    imp.out(0, constant_value(Tensor<double>(Shape{static_cast<int64_t>(v.size())}, v),
                              TensorProto::INT64));
  }
}

void convert_constant_of_shape(I& imp) {
  auto shape = imp.ints_input(0, "shape");
  double fill = 0;
  int elem = TensorProto::FLOAT;
  if (const AttributeProto* a = imp.attr("value")) {
    Value t;
    try {
      t = tensor_attr(*a);
    } catch (const UserError& e) {
      imp.fail(e.message());
    }
    if (t.data.numel() != 1) imp.fail("ConstantOfShape's value must hold one element");
    fill = t.data.data[0];
    elem = t.elem;
  }
  bool all_const =
      std::all_of(shape.begin(), shape.end(), [](const SymExpr& s) { return s.is_constant(); });
  if (all_const) {
    // Small ones fold (shapes and axes are made this way); large ones, such as the weights of
    // ONNX's "light" models, are filled at run time rather than held by the import.
    auto s = const_shape_of(imp, shape);
    int64_t n = 1;
    bool small = true;
    for (int64_t d : s) {
      if (d < 0) check_foldable(imp, s);  // names the bad shape
      if (d > 0 && n > (int64_t{1} << 16) / d) small = false;
      n *= small ? d : 1;
    }
    if (small) {
      imp.out(0, constant_value(Tensor<double>(s, fill), elem));
      return;
    }
  }
  auto r = rational_of(fill);
  if (!r) imp.fail("ConstantOfShape's value must be finite");
  imp.out(0, imp.as_elem(imp.op("fill", {}, {{"shape", shape}, {"value", *r}}), elem));
}

void convert_identity(I& imp) {
  imp.only_outputs(1);
  imp.out(0, imp.in(0));
}

void convert_dropout(I& imp) {
  imp.only_outputs(2);
  // Opset 12 on: training_mode is an input; weft runs inference only.
  if (imp.has_input(2)) {
    auto t = imp.ints_of(imp.in(2));
    if (!t || t->empty() || !(t->at(0) == SymExpr(0)))
      imp.fail("training_mode must be a constant false (weft runs inference only)");
  }
  imp.out(0, imp.in(0));
  // The mask of an inference run keeps every element.
  if (imp.node().output_size() > 1 && !imp.node().output(1).empty()) {
    const Value& x = imp.in(0);
    std::vector<SymExpr> d = x.kind == VKind::runtime ? imp.dims(x.name) : syms(folded_shape(x));
    Shape shape = const_shape_of(imp, d);
    check_foldable(imp, shape);
    imp.out(1, constant_value(Tensor<double>(shape, 1.0), TensorProto::BOOL));
  }
}

}  // namespace

// Shapes, data movement, constants and casts.
void add_shape_converters(std::vector<Converter>& table) {
  table.insert(table.end(), {
                                // clang-format off
      {"Reshape", 5, kMaxOpset, convert_reshape},
      {"Flatten", 1, kMaxOpset, convert_flatten},
      {"Transpose", 1, kMaxOpset, convert_transpose},
      {"Concat", 4, kMaxOpset, convert_concat},
      {"Split", 2, kMaxOpset, convert_split},
      {"Slice", 1, kMaxOpset, convert_slice},
      {"Gather", 1, kMaxOpset, convert_gather},
      {"Unsqueeze", 1, kMaxOpset, convert_unsqueeze},
      {"Squeeze", 1, kMaxOpset, convert_squeeze},
      {"Cast", 6, kMaxOpset, convert_cast},
      {"CastLike", 15, kMaxOpset, convert_castlike},
      {"Expand", 8, kMaxOpset, convert_expand},
      {"Shape", 1, kMaxOpset, convert_shape},
      {"ConstantOfShape", 9, kMaxOpset, convert_constant_of_shape},
      {"Constant", 1, kMaxOpset, convert_constant},
      {"Identity", 1, kMaxOpset, convert_identity},
      {"Dropout", 1, kMaxOpset, convert_dropout},
      {"Tile", 6, kMaxOpset, convert_tile},
      {"Range", 11, kMaxOpset, convert_range},
      {"Pad", 2, kMaxOpset, convert_pad},
                                // clang-format on
                            });
}

}  // namespace weft::onnx_import
#endif
