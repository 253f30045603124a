// Typed access to operator attributes.
#include "ir/attrs.h"

#include "core/error.h"

namespace weft {

int64_t Attrs::get_int(const std::string& name) const {
  auto it = map_.find(name);
  WEFT_CHECK(it != map_.end() && std::holds_alternative<int64_t>(it->second),
             "integer attribute '{}' missing", name);
  return std::get<int64_t>(it->second);
}

const Rational& Attrs::get_rational(const std::string& name) const {
  auto it = map_.find(name);
  WEFT_CHECK(it != map_.end() && std::holds_alternative<Rational>(it->second),
             "rational attribute '{}' missing", name);
  return std::get<Rational>(it->second);
}

const std::vector<int64_t>& Attrs::get_list(const std::string& name) const {
  auto it = map_.find(name);
  WEFT_CHECK(it != map_.end() && std::holds_alternative<std::vector<int64_t>>(it->second),
             "list attribute '{}' missing", name);
  return std::get<std::vector<int64_t>>(it->second);
}

}  // namespace weft
