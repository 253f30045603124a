// The search configuration's JSON form and field table, both expanded from
// search/config_fields.def (so results record exactly what was searched).
#include "search/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <type_traits>

#include "core/system_memory.h"

namespace weft {
namespace {

using nlohmann::json;

// The rules of the `accepts` column of config_fields.def. Each reads a JSON value into a field's
// type, returning false (and optionally a detail for the error) when the value is not accepted.
namespace accept {

// Integers in [min, max] that the field's type holds.
struct IntegerIn {
  int64_t min, max;
  std::string_view accepted;
  template <class T>
  bool read(const json& v, T& out, std::string&) const {
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) return false;
    int64_t x = v.get<int64_t>();
    if (x < min || x > max || x > static_cast<int64_t>(std::numeric_limits<T>::max())) return false;
    out = static_cast<T>(x);
    return true;
  }
};

struct AnyUnsigned {
  std::string_view accepted = "a non-negative integer";
  bool read(const json& v, uint64_t& out, std::string&) const {
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) return false;
    out = v.get<uint64_t>();
    return true;
  }
};

// Numbers in [min, max], or (min, max) when `open`.
struct NumberIn {
  double min, max;
  bool open;
  std::string_view accepted;
  bool read(const json& v, double& out, std::string&) const {
    if (!v.is_number()) return false;
    double x = v.get<double>();
    if (open ? (x <= min || x >= max) : (x < min || x > max)) return false;
    out = x;
    return true;
  }
};

struct Boolean {
  std::string_view accepted = "true or false";
  bool read(const json& v, bool& out, std::string&) const {
    if (!v.is_boolean()) return false;
    out = v.get<bool>();
    return true;
  }
};

// Any name: an unknown target is reported where it is looked up (target_by_name).
struct TargetName {
  std::string_view accepted = "a target name";
  bool read(const json& v, std::string& out, std::string&) const {
    if (!v.is_string()) return false;
    out = v.get<std::string>();
    return true;
  }
};

struct BaselineMode {
  std::string_view accepted = "\"on\", \"off\" or \"seed\"";
  bool read(const json& v, std::string& out, std::string&) const {
    if (!v.is_string()) return false;
    const std::string mode = v.get<std::string>();
    if (mode != "on" && mode != "off" && mode != "seed") return false;
    out = v.get<std::string>();
    return true;
  }
};

struct OperatorNames {
  bool accumulators_only;
  std::string_view accepted;
  bool read(const json& v, std::vector<OpKind>& out, std::string& detail) const {
    if (!v.is_array()) return false;
    std::vector<OpKind> ops;
    for (const json& e : v) {
      auto k = e.is_string() ? op_by_name(e.get<std::string>()) : std::nullopt;
      if (!k || (accumulators_only && !is_accumulator(*k))) {
        detail = fmt::format(" ({} is not {})", e.dump(),
                             accumulators_only ? "an accumulator" : "an operator");
        return false;
      }
      if (is_model_only(*k)) {
        detail = fmt::format(" ({} is a model-level operator, which no µGraph holds)", e.dump());
        return false;
      }
      ops.push_back(*k);
    }
    out = std::move(ops);
    return true;
  }
};

struct PositiveIntegers {
  std::string_view accepted = "a non-empty list of positive integers";
  bool read(const json& v, std::vector<int64_t>& out, std::string& detail) const {
    if (!v.is_array() || v.empty()) return false;
    constexpr IntegerIn element{1, INT64_MAX, ""};
    std::vector<int64_t> xs(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      if (!element.read(v[i], xs[i], detail)) return false;
    out = std::move(xs);
    return true;
  }
};

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr IntegerIn count{0, INT64_MAX, "a non-negative integer"};
constexpr IntegerIn positive{1, INT64_MAX, "a positive integer"};
constexpr IntegerIn grid_dims{1, 3, "1, 2 or 3"};
constexpr NumberIn seconds{0, kInfinity, false, "a non-negative number"};
constexpr NumberIn probability{0, 1, true, "a probability in (0, 1)"};
constexpr AnyUnsigned any_unsigned;
constexpr Boolean boolean;
constexpr TargetName target_name;
constexpr BaselineMode baseline_mode;
constexpr OperatorNames operators{false, "a list of operator names"};
constexpr OperatorNames accumulators{true, "a list of accumulator names"};
constexpr PositiveIntegers positive_list;

}  // namespace accept

json field_json(const std::vector<OpKind>& ops) {
  json a = json::array();
  for (OpKind k : ops) a.push_back(op_info(k).name);
  return a;
}
template <class T>
json field_json(const T& value) {
  return json(value);
}

template <class T>
constexpr SearchConfigField::Form form_of() {
  if constexpr (std::is_same_v<T, std::string>) return SearchConfigField::Form::text;
  if constexpr (std::is_same_v<T, bool>) return SearchConfigField::Form::flag;
  return SearchConfigField::Form::json;
}

constexpr SearchConfigField kFields[] = {
#define WEFT_SEARCH_CONFIG_FIELD(type, member, default_value, accepts, flag, doc) \
  {#member, flag, doc, accept::accepts.accepted, form_of<type>()},
#include "search/config_fields.def"
#undef WEFT_SEARCH_CONFIG_FIELD
};

}  // namespace

std::span<const SearchConfigField> search_config_fields() {
  return kFields;
}

nlohmann::json config_flag_value(const SearchConfigField& field, const std::string& text) {
  switch (field.form) {
    case SearchConfigField::Form::text:
      return text;
    case SearchConfigField::Form::flag:
      return !field.flag.starts_with("--no-");
    case SearchConfigField::Form::json: {
      json j = json::parse(text, nullptr, false);
      return j.is_discarded() ? json(text) : j;
    }
  }
  return nullptr;
}

int64_t SearchConfig::default_memory_budget_mb() {
  // Half: the rest is for the verifier, the operating system and whatever else runs (the
  // estimate counts the search's structures, not the allocator's slack).
  int64_t bytes = physical_memory_bytes();
  return bytes > 0 ? std::max<int64_t>(1, bytes / 2 / (int64_t{1} << 20)) : 4096;
}

Budget SearchConfig::budget() const {
  // Capped at 2^40 MB so the conversion to bytes cannot overflow.
  const int64_t memory_mb = std::min(memory_budget_mb, int64_t{1} << 40);
  return Budget({.time_s = time_budget_s, .states = state_budget, .memory_bytes = memory_mb << 20});
}

nlohmann::json SearchConfig::to_json() const {
  json j = json::object();
#define WEFT_SEARCH_CONFIG_FIELD(type, member, default_value, accepts, flag, doc) \
  j[#member] = field_json(member);
#include "search/config_fields.def"
#undef WEFT_SEARCH_CONFIG_FIELD
  return j;
}

void SearchConfig::set(std::string_view key, const nlohmann::json& value, const SourceLoc& loc,
                       const std::string& name) {
  auto read = [&](auto& field, const auto& rule) {
    std::string detail;
    if (!rule.read(value, field, detail))
      throw UserError(
          loc, fmt::format("{} must be {}, got {}{}", name, rule.accepted, value.dump(), detail));
  };
#define WEFT_SEARCH_CONFIG_FIELD(type, member, default_value, accepts, flag, doc) \
  if (key == #member) return read(member, accept::accepts);
#include "search/config_fields.def"
#undef WEFT_SEARCH_CONFIG_FIELD
  throw UserError(loc, fmt::format("unknown configuration key '{}'", key));
}

void SearchConfig::merge_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw UserError(SourceLoc{origin}, "a search configuration is a JSON object");
  for (const auto& [key, value] : j.items()) set(key, value, SourceLoc{origin}, "'" + key + "'");
}

SearchConfig SearchConfig::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(SourceLoc{path}, "cannot read the configuration file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(SourceLoc{path}, fmt::format("not valid JSON: {}", e.what()));
  }
  SearchConfig c;
  c.merge_json(j, path);
  return c;
}

}  // namespace weft
