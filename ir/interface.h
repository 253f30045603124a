// A program's declared interface: roles over its inputs and outputs, `interface NAME(role=V,
// role=[V, W])` in the text form (docs/format.md). It is data for a layer that runs the program one
// particular way (the mega-kernel's decode loop reads `interface decode`, mpk/decode_interface.h);
// the µGraph layers carry it with the program and never read it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace weft {

struct ProgramInterface {
  std::string name;
  // Role name and the values it names, in declared order (one value, or a list such as one per
  // layer).
  std::vector<std::pair<std::string, std::vector<std::string>>> roles;
  SourceLoc loc;

  // The values of `role`, or nullptr when the interface does not declare it.
  const std::vector<std::string>* find(std::string_view role) const;
};

// Names and roles; source locations are ignored.
bool operator==(const ProgramInterface& a, const ProgramInterface& b);

// The interface named `name` in `interfaces`, or nullptr.
const ProgramInterface* find_interface(const std::vector<ProgramInterface>& interfaces,
                                       std::string_view name);

// One statement of the text form, `interface NAME(role=V, role=[V, W])`; a role of one value is
// written without brackets (both forms read back the same).
std::string interface_text(const ProgramInterface& i);

}  // namespace weft
