// What the operating system says about memory: the physical memory this process may use, and its
// resident size (for budgets that must hold on any machine, and as a cross-check of estimates).
#pragma once

#include <cstdint>
#include <string>

namespace weft {

// Physical memory available to this process: the machine's RAM (sysconf, else /proc/meminfo),
// lowered to a cgroup memory limit when one is set (containers). 0 when nothing can be read.
int64_t physical_memory_bytes();

// "512 bytes", "3.0 MiB", "26.2 GiB": a size of memory as messages give it.
std::string memory_str(int64_t bytes);

// Resident set size now (/proc/self/statm) and at its peak so far (getrusage); 0 when unknown.
int64_t resident_bytes();
int64_t peak_resident_bytes();

}  // namespace weft
