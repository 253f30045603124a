// The one door for loading generated libraries (see generated_library.h).
#include "runtime/generated_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>

#include "core/error.h"

namespace weft {

namespace {
std::atomic<int64_t> opened{0};
std::mutex note_mutex;
}  // namespace

void* open_generated_library(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw UserError(fmt::format("cannot load {}: {}", path, dlerror()));
  opened.fetch_add(1);
  if (const char* note = std::getenv("WEFT_NOTE_GENERATED_LIBRARIES"); note && *note) {
    std::lock_guard lock(note_mutex);
    std::ofstream(note, std::ios::app) << path << '\n';
  }
  return handle;
}

int64_t generated_libraries_opened() {
  return opened.load();
}

}  // namespace weft
