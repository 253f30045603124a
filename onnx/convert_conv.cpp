// The ONNX converters of convolutional networks (Conv, pooling, LRN), with their rows of the
// converter table.
#ifdef WEFT_HAVE_ONNX
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "core/dtype_convert.h"
#include "model/model_ops.h"
#include "onnx/convert_common.h"

namespace weft::onnx_import {
namespace {

// kernel/strides/pads/dilations of a Conv or pool node for `n` spatial dims, auto_pad resolved
// against the input's spatial dims.
MAttrs window_attrs(I& imp, const std::vector<SymExpr>& xd, const std::vector<int64_t>& kernel) {
  size_t n = kernel.size();
  if (n + 2 != xd.size())
    imp.fail(fmt::format("a kernel of {} dims for an input of rank {}", n, xd.size()));
  auto strides = imp.attr_ints("strides").value_or(std::vector<int64_t>(n, 1));
  auto dil = imp.attr_ints("dilations").value_or(std::vector<int64_t>(n, 1));
  auto pads = imp.attr_ints("pads").value_or(std::vector<int64_t>(2 * n, 0));
  if (strides.size() != n || dil.size() != n || pads.size() != 2 * n)
    imp.fail("strides, dilations and pads must match the kernel's spatial rank");
  std::string auto_pad = imp.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") {
    pads.assign(2 * n, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      auto in = xd[2 + i].as_constant();
      if (!in) imp.fail("auto_pad SAME_* needs constant spatial dims");
      int64_t out = (*in + strides[i] - 1) / strides[i];
      int64_t total =
          std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - *in);
      int64_t small = total / 2, big = total - small;
      pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      pads[i + n] = auto_pad == "SAME_UPPER" ? big : small;
    }
  } else if (auto_pad != "NOTSET") {
    imp.fail(fmt::format("auto_pad '{}'", auto_pad));
  }
  return {{"strides", syms(strides)}, {"pads", syms(pads)}, {"dilations", syms(dil)}};
}

void convert_conv(I& imp) {
  std::string x = imp.rt(0), w = imp.rt(1);
  auto xd = imp.dims(x), wd = imp.dims(w);
  if (xd.size() < 3 || wd.size() != xd.size())
    imp.fail("Conv needs x [N, C, ...] and w of the same rank");
  std::vector<int64_t> kernel = imp.attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
  if (kernel.empty()) kernel = const_shape_of(imp, std::vector<SymExpr>(wd.begin() + 2, wd.end()));
  MAttrs attrs = window_attrs(imp, xd, kernel);
  attrs["group"] = SymExpr(imp.attr_int("group", 1));
  Value y = imp.op("conv", {x, w}, attrs);
  if (imp.has_input(2)) {
    std::vector<SymExpr> shape(xd.size(), SymExpr(1));
    shape[1] = wd[0];
    std::string b = imp.runtime(reshape_value(imp, imp.in(2), shape)).first;
    y = imp.op("add", {y.name, b});
  }
  imp.out(0, y);
}

void convert_pool(I& imp, const char* op) {
  imp.only_outputs(std::string(op) == "max_pool" ? 2 : 1);
  std::string x = imp.rt(0);
  auto kernel = imp.attr_ints("kernel_shape");
  if (!kernel) imp.fail("pooling needs kernel_shape");
  MAttrs attrs = window_attrs(imp, imp.dims(x), *kernel);
  attrs["kernel"] = syms(*kernel);
  attrs["ceil_mode"] = SymExpr(imp.attr_int("ceil_mode", 0));
  if (std::string(op) == "avg_pool")
    attrs["count_include_pad"] = SymExpr(imp.attr_int("count_include_pad", 0));
  else if (imp.attr_int("storage_order", 0))
    imp.fail("storage_order=1 is not supported");
  imp.out(0, imp.op(op, {x}, attrs));
  if (imp.node().output_size() > 1 && !imp.node().output(1).empty()) {
    attrs.erase("count_include_pad");
    imp.out(1, imp.op("max_pool_indices", {x}, attrs));
  }
}

void convert_lrn(I& imp) {
  std::string x = imp.rt(0);
  imp.out(0, imp.op("lrn", {x},
                    {{"size", SymExpr(imp.attr_int("size", 1))},
                     {"alpha", rational_attr(imp, imp.attr_float("alpha", 1e-4), "alpha")},
                     {"beta", rational_attr(imp, imp.attr_float("beta", 0.75), "beta")},
                     {"bias", rational_attr(imp, imp.attr_float("bias", 1.0), "bias")}}));
}

}  // namespace

// Convolution, pooling and LRN.
void add_conv_converters(std::vector<Converter>& table) {
  table.insert(table.end(),
               {
                   // clang-format off
      {"Conv", 1, kMaxOpset, convert_conv},
      {"MaxPool", 1, kMaxOpset, [](I& i) { convert_pool(i, "max_pool"); }},
      {"AveragePool", 1, kMaxOpset, [](I& i) { convert_pool(i, "avg_pool"); }},
      {"GlobalAveragePool", 1, kMaxOpset, [](I& i) { unary(i, "global_avg_pool"); }},
      {"GlobalMaxPool", 1, kMaxOpset, [](I& i) { unary(i, "global_max_pool"); }},
      {"LRN", 1, kMaxOpset, convert_lrn},
                   // clang-format on
               });
}

}  // namespace weft::onnx_import
#endif
