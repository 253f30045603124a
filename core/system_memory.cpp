// Physical memory and resident size from sysconf, /proc and cgroup files (Linux; other systems
// fall back to what sysconf and getrusage give).
#include "core/system_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace weft {
namespace {

// The first number in `path` (a cgroup limit, "max" meaning none), or 0.
int64_t read_limit(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word.empty() || word.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  try {
    return static_cast<int64_t>(std::stoull(word));
  } catch (...) {
    return 0;  // out of range: cgroup v1 writes a huge number for "no limit"
  }
}

int64_t meminfo_total() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t kb = 0;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") return kb * 1024;
  return 0;
}

}  // namespace

int64_t physical_memory_bytes() {
  int64_t ram = 0;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) ram = static_cast<int64_t>(pages) * page;
  if (ram <= 0) ram = meminfo_total();
  // A container's limit binds before the machine's RAM does. cgroup v1 reports "no limit" as a
  // number near 2^63, which is larger than the RAM and so ignored.
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    int64_t limit = read_limit(path);
    if (limit > 0 && (ram <= 0 || limit < ram)) ram = limit;
  }
  return std::max<int64_t>(ram, 0);
}

int64_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  int64_t size = 0, resident = 0;
  long page = sysconf(_SC_PAGE_SIZE);
  if (!(in >> size >> resident) || page <= 0) return 0;
  return resident * page;
}

int64_t peak_resident_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // kilobytes on Linux
}

std::string memory_str(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) return fmt::format("{:.1f} GiB", bytes / double(1 << 30));
  if (bytes >= (int64_t{1} << 20)) return fmt::format("{:.1f} MiB", bytes / double(1 << 20));
  return fmt::format("{} bytes", bytes);
}

}  // namespace weft
