// Running a shell command and reading what it prints (nvcc, a peer's Python).
#pragma once

#include <string>

namespace weft {

// Runs `command` through the shell with stderr joined to stdout, appending everything it prints to
// `output`. Returns its wait status (pclose's: 0 for success), or -1 when it could not start.
int run_command(const std::string& command, std::string& output);

}  // namespace weft
