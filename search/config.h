// The search configuration: one typed struct with defaults, overridable from JSON and from
// `weft optimize`'s flags. Its fields are declared once, in search/config_fields.def.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/budget.h"
#include "core/error.h"
#include "core/target.h"
#include "ir/ops.h"

namespace weft {

struct SearchConfig {
#define WEFT_SEARCH_CONFIG_FIELD(type, name, default_value, accepts, flag, doc) \
  type name = default_value;
#include "search/config_fields.def"
#undef WEFT_SEARCH_CONFIG_FIELD

  // Half the physical memory available to this process (core/system_memory.h), in megabytes;
  // 4096 where it cannot be read.
  static int64_t default_memory_budget_mb();

  // The budget these settings give a run, starting now: time_budget_s, state_budget and
  // memory_budget_mb (in bytes).
  Budget budget() const;

  // Every field by its key (operator lists as names).
  nlohmann::json to_json() const;
  // Overrides fields present in `j`; unknown keys or bad values are UserErrors naming the key,
  // located at `origin` (a file name).
  void merge_json(const nlohmann::json& j, const std::string& origin);
  // Sets the field `key` to `value`; errors call the field `name` (e.g. "--top-k"), at `loc`.
  void set(std::string_view key, const nlohmann::json& value, const SourceLoc& loc,
           const std::string& name);
  static SearchConfig load(const std::string& path);  // defaults overridden by a JSON file
};

// A field of SearchConfig as a front end (flags, bindings, documentation) sees it.
struct SearchConfigField {
  // How a command-line value is read: as text, as a JSON number or list, or as a flag.
  enum class Form { text, json, flag };
  std::string_view key;       // the member and its JSON key
  std::string_view flag;      // the `weft optimize` option, "" for none
  std::string_view doc;       // help text
  std::string_view accepted;  // the values it accepts, e.g. "a non-negative integer"
  Form form;
};

// Every field, in declaration order.
std::span<const SearchConfigField> search_config_fields();

// The JSON value a flag's text gives `field`, for SearchConfig::set (which checks it as it checks
// a file's): the text itself (Form::text), true or false by the flag's name (Form::flag: a --no-
// flag sets false), or the text read as JSON, kept as text when it is not JSON (Form::json).
nlohmann::json config_flag_value(const SearchConfigField& field, const std::string& text);

}  // namespace weft
