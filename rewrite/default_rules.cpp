// The embedded default rule set, parsed on first use.
#include "rewrite/default_rules.h"

#include "core/embedded_files.h"
#include "core/source_file.h"

namespace weft {

const std::vector<Rule>& default_rules() {
  static const std::vector<Rule> rules =
      parse_rules(embedded_file(kDefaultRulesPath), kDefaultRulesPath);
  return rules;
}

std::vector<Rule> load_rules(const std::string& path) {
  if (path.empty() || path == "default") return default_rules();
  return parse_rules(read_source_file(path), path);
}

}  // namespace weft
