// Union-find over the axes of the program's inputs, following its operators.
#include "search/dim_classes.h"

#include <numeric>

namespace weft {
namespace {

struct UnionFind {
  std::vector<int> parent;
  std::vector<bool> reduced;
  int make() {
    parent.push_back(static_cast<int>(parent.size()));
    reduced.push_back(false);
    return parent.back();
  }
  int find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  int join(int a, int b) {
    if (a < 0) return b;
    if (b < 0) return a;
    a = find(a);
    b = find(b);
    if (a != b) {
      parent[b] = a;
      reduced[a] = reduced[a] || reduced[b];
    }
    return a;
  }
};

}  // namespace

DimClasses analyze_dim_classes(const Graph& p) {
  DimClasses out;
  UnionFind uf;
  std::vector<std::vector<int>> sym(p.values.size());  // per value, per dim: symbol or -1 (unit)
  for (ValueId v : p.inputs) {
    if (p.type(v).shape.size() > 4) return out;
    for (int64_t d : p.type(v).shape) sym[v].push_back(d == 1 ? -1 : uf.make());
  }
  for (const Op& op : p.ops) {
    const OpInfo& info = op_info(op.kind);
    auto in = [&](int i) -> const std::vector<int>& { return sym[op.inputs[i]]; };
    std::vector<int> r;
    switch (info.op_class) {
      case OpClass::unary:
        r = in(0);
        break;
      case OpClass::binary:
        r.resize(in(0).size());
        for (size_t d = 0; d < r.size(); ++d) r[d] = uf.join(in(0)[d], in(1)[d]);
        break;
      case OpClass::matmul: {
        size_t n = in(0).size();
        int c = uf.join(in(0)[n - 1], in(1)[n - 2]);
        if (c >= 0) uf.reduced[uf.find(c)] = true;
        r.resize(n);
        for (size_t d = 0; d + 2 < n; ++d) r[d] = uf.join(in(0)[d], in(1)[d]);
        r[n - 2] = in(0)[n - 2];
        r[n - 1] = in(1)[n - 1];
        break;
      }
      case OpClass::reduction: {
        r = in(0);
        int64_t d = op.attrs.get_int("dim");
        if (r[d] >= 0) uf.reduced[uf.find(r[d])] = true;
        if (op.attrs.get_int("to") == 1) r[d] = -1;
        break;
      }
      case OpClass::movement:  // reshape, concat, kernels, ...: not followed
      case OpClass::composite:
      case OpClass::structure:
      case OpClass::hierarchy:
      case OpClass::model:
        return out;
    }
    sym[op.outputs[0]] = r;
  }
  // Number the classes densely.
  std::vector<int> id(uf.parent.size(), -1);
  int next = 0;
  auto cls = [&](int s) -> int8_t {
    if (s < 0) return kUnit;
    int root = uf.find(s);
    if (id[root] < 0) {
      id[root] = next++;
      out.reduced.push_back(uf.reduced[root]);
    }
    return static_cast<int8_t>(id[root]);
  };
  auto list = [&](const std::vector<int>& s) {
    DimClassList l;
    l.fill(kUnit);
    for (size_t d = 0; d < s.size(); ++d) l[d] = cls(s[d]);
    return l;
  };
  for (ValueId v : p.inputs) out.input_dims.push_back(list(sym[v]));
  for (ValueId v : p.outputs) out.output_dims.push_back(list(sym[v]));
  if (next > 63) return DimClasses{};
  out.usable = true;
  return out;
}

}  // namespace weft
