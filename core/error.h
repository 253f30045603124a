// User-facing errors (located, readable, exit 1) and internal-invariant checks (bugs, exit 2).
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace weft {

// Where something came from in a source file; line/col are 1-based, 0 means unknown.
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;

  bool known() const { return line > 0; }
  // "file:line:col", "file", or "" when nothing is known.
  std::string str() const;
};

// A mistake in the user's input. Rendered as "file:line:col: error: message".
class UserError : public std::runtime_error {
 public:
  UserError(SourceLoc loc, std::string message);
  explicit UserError(std::string message) : UserError(SourceLoc{}, std::move(message)) {}

  const SourceLoc& loc() const { return loc_; }
  const std::string& message() const { return message_; }

 private:
  SourceLoc loc_;
  std::string message_;
};

// A broken invariant inside weft: always a bug in weft, never in the user's input.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

namespace detail {
[[noreturn]] void check_failed(const char* condition, const char* file, int line,
                               const std::string& message);
}  // namespace detail

}  // namespace weft

// WEFT_CHECK(cond, "format {}", args...): internal invariant; throws InternalError when false.
#define WEFT_CHECK(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::weft::detail::check_failed(#cond, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)

// WEFT_FAIL("format {}", args...): an internal invariant known broken where control arrives;
// never returns, so it may end a non-void function.
#define WEFT_FAIL(...) \
  ::weft::detail::check_failed("unreachable", __FILE__, __LINE__, ::fmt::format(__VA_ARGS__))

// Throws a UserError at a location with a formatted message.
#define WEFT_USER_ERROR(loc, ...) throw ::weft::UserError((loc), ::fmt::format(__VA_ARGS__))
