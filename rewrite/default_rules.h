// The rule set weft applies unless told otherwise: `weft rules generate --depth 3` as committed in
// rewrite/rules/default.rules (embedded in the library at build time), read once.
#pragma once

#include <string>
#include <vector>

#include "rewrite/rule.h"

namespace weft {

inline constexpr const char* kDefaultRulesPath = "rewrite/rules/default.rules";

const std::vector<Rule>& default_rules();

// The rules of `path`, or default_rules() for "" or "default". UserError for a bad file.
std::vector<Rule> load_rules(const std::string& path);

}  // namespace weft
