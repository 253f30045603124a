// Program interfaces: lookup, equality and their statement in the text form.
#include "ir/interface.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace weft {

const std::vector<std::string>* ProgramInterface::find(std::string_view role) const {
  for (const auto& [name, values] : roles)
    if (name == role) return &values;
  return nullptr;
}

bool operator==(const ProgramInterface& a, const ProgramInterface& b) {
  return a.name == b.name && a.roles == b.roles;
}

const ProgramInterface* find_interface(const std::vector<ProgramInterface>& interfaces,
                                       std::string_view name) {
  for (const ProgramInterface& i : interfaces)
    if (i.name == name) return &i;
  return nullptr;
}

std::string interface_text(const ProgramInterface& i) {
  std::vector<std::string> roles;
  for (const auto& [role, values] : i.roles)
    roles.push_back(values.size() == 1 ? fmt::format("{}={}", role, values[0])
                                       : fmt::format("{}=[{}]", role, fmt::join(values, ", ")));
  return fmt::format("interface {}({})", i.name, fmt::join(roles, ", "));
}

}  // namespace weft
