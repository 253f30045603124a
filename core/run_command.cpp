// run_command: popen with the output read to the end.
#include "core/run_command.h"

#include <cstdio>

namespace weft {

int run_command(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  return pclose(pipe);
}

}  // namespace weft
