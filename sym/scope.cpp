// Declaration and lookup of symbolic variables.
#include "sym/scope.h"

namespace weft {

const SymVar& SymScope::declare(const std::string& name, int64_t lo, std::optional<int64_t> hi,
                                const SourceLoc& loc) {
  if (vars_.count(name)) WEFT_USER_ERROR(loc, "symbolic variable '{}' is already declared", name);
  try {
    return vars_.emplace(name, SymVar(name, lo, hi)).first->second;
  } catch (const UserError& e) {
    throw UserError(loc, e.message());  // the same message, located at the declaration
  }
}

const SymVar* SymScope::find(std::string_view name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : &it->second;
}

}  // namespace weft
