// Tensor shapes: a list of dimension sizes, row-major (last dim contiguous).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Row-major strides (in elements).
inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// "[16, 4096]"
std::string shape_str(const Shape& s);

}  // namespace weft
