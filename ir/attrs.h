// Operator attributes: a small ordered map from name to an integer, rational or integer list.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/rational.h"

namespace weft {

// How an attribute is written and read. DimMap/OptDim use -1 for "-" (replicated / none).
enum class AttrKind : uint8_t {
  integer,   // 16
  rational,  // 1/4096, 1e-6
  int_list,  // [16, 4096]
  dim_map,   // [1, -, 0]   one entry per grid dim
  opt_dim,   // 1 or -
};

using AttrValue = std::variant<int64_t, Rational, std::vector<int64_t>>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  bool has(const std::string& name) const { return map_.count(name) != 0; }
  void set(const std::string& name, AttrValue v) { map_[name] = std::move(v); }
  void erase(const std::string& name) { map_.erase(name); }

  // Typed getters; the attribute must exist with that type (checked).
  int64_t get_int(const std::string& name) const;
  const Rational& get_rational(const std::string& name) const;
  const std::vector<int64_t>& get_list(const std::string& name) const;
  int64_t get_int_or(const std::string& name, int64_t fallback) const {
    return has(name) ? get_int(name) : fallback;
  }

  const std::map<std::string, AttrValue>& entries() const { return map_; }
  friend bool operator==(const Attrs&, const Attrs&) = default;

 private:
  std::map<std::string, AttrValue> map_;
};

}  // namespace weft
