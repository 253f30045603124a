// The dimension algebras' operations that are not one line: attribute normalization, the
// shared messages, and the text of symbolic types.
#include "ir/dim_algebra.h"

#include <fmt/format.h>

namespace weft {

namespace {

template <class Tensor>
void require_same_dtype_of(const std::vector<Tensor>& in, auto&& fail) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].dtype != in[0].dtype)
      fail(fmt::format("operand {} is {} but operand 1 is {}; operands must have the same dtype",
                       i + 1, dtype_name(in[i].dtype), dtype_name(in[0].dtype)));
}

}  // namespace

std::string sym_dims_str(const std::optional<std::vector<SymExpr>>& dims, int rank) {
  if (!dims) return fmt::format("[ndim={}]", rank);
  std::string s = "[";
  for (size_t i = 0; i < dims->size(); ++i) s += (i ? ", " : "") + (*dims)[i].str();
  return s + "]";
}

std::string SymTensor::str() const {
  return std::string(dtype_name(dtype)) + sym_dims_str(dims, rank);
}

int64_t ConcreteDims::dim_attr(Attrs& attrs, const char* name, int rank) {
  int64_t d = attrs.get_int(name);
  if (d < -rank || d >= rank)
    fail(fmt::format("{}={} is out of range for a tensor of rank {} (valid: {}..{})", name, d, rank,
                     -rank, rank - 1));
  if (d < 0) d += rank;
  attrs.set(name, d);
  return d;
}

void ConcreteDims::require_same_dtype(const std::vector<Tensor>& in) {
  require_same_dtype_of(in, [](const std::string& m) { fail(m); });
}

bool SymbolicDims::known(const std::vector<Tensor>& in) {
  for (const Tensor& t : in)
    if (!t.dims) return false;
  return true;
}

SymTensor SymbolicDims::tensor(DType dtype, std::vector<SymExpr> dims) {
  int rank = static_cast<int>(dims.size());
  return {dtype, rank, std::move(dims)};
}

std::string SymbolicDims::str(const std::vector<SymExpr>& dims) {
  return sym_dims_str(dims, static_cast<int>(dims.size()));
}

SymExpr SymbolicDims::product(const std::vector<SymExpr>& dims) {
  SymExpr p(1);
  for (const SymExpr& d : dims) p *= d;
  return p;
}

int64_t SymbolicDims::dim_attr(MAttrs& attrs, const char* name, int rank) {
  int64_t d = normalize_dim(ctx_, int_attr(attrs, name), rank, name);
  attrs[name] = SymExpr(d);
  return d;
}

int64_t SymbolicDims::const_attr_at_least(const MAttrs& a, const char* name, int64_t lo) const {
  const SymExpr& e = int_attr(a, name);
  auto c = e.as_constant();
  if (!c || *c < lo) fail(fmt::format("{}={} must be an integer >= {}", name, e.str(), lo));
  return *c;
}

void SymbolicDims::require_same_dtype(const std::vector<Tensor>& in) const {
  require_same_dtype_of(in, [&](const std::string& m) { fail(m); });
}

}  // namespace weft
