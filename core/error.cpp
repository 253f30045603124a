// Formatting of user errors and the internal-check failure path.
#include "core/error.h"

namespace weft {

std::string SourceLoc::str() const {
  if (file.empty() && !known()) return "";
  std::string out = file.empty() ? "<input>" : file;
  if (known()) out += fmt::format(":{}:{}", line, col);
  return out;
}

static std::string render(const SourceLoc& loc, const std::string& message) {
  std::string where = loc.str();
  return where.empty() ? "error: " + message : where + ": error: " + message;
}

UserError::UserError(SourceLoc loc, std::string message)
    : std::runtime_error(render(loc, message)),
      loc_(std::move(loc)),
      message_(std::move(message)) {}

namespace detail {
void check_failed(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(
      fmt::format("internal error (a bug in weft, please report it): {}:{}: "
                  "check '{}' failed: {}",
                  file, line, condition, message));
}
}  // namespace detail

}  // namespace weft
