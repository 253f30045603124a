// The shared-object cache of the CPU and CUDA runtimes: key, directory, compile-and-rename.
#include "runtime/build_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace weft {

namespace fs = std::filesystem;

uint64_t content_hash(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string default_cache_directory(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* d = std::getenv("WEFT_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/weft";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/weft";
  return "/tmp/weft-cache";
}

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path prepare_directory(const std::string& configured) {
  fs::path dir = default_cache_directory(configured);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec && configured.empty()) {
    // A read-only home (CI sandboxes): fall back to the temp directory.
    dir = fs::temp_directory_path() / "weft-cache";
    ec.clear();
    fs::create_directories(dir, ec);
  }
  if (ec)
    throw UserError(
        fmt::format("cannot create the cache directory {}: {}", dir.string(), ec.message()));
  return dir;
}

}  // namespace

CacheResult build_cached(const CacheBuild& build) {
  fs::path dir = prepare_directory(build.configured_dir);
  std::string key = fmt::format("{:016x}", content_hash(build.key_material + "\n" + build.source));
  fs::path so = dir / (key + ".so");
  CacheResult r;
  r.artifact = so.string();
  r.from_cache = fs::exists(so);
  if (r.from_cache) return r;
  std::string tag = fmt::format("{}.{}", key, getpid());
  fs::path src = dir / (tag + build.source_extension), tmp = dir / (tag + ".so.tmp"),
           log = dir / (tag + ".log");
  std::ofstream(src) << build.source;
  r.command = build.command(src.string(), tmp.string());
  std::string shell = fmt::format("{} > '{}' 2>&1", r.command, log.string());
  std::error_code ec;
  if (std::system(shell.c_str()) != 0 || !fs::exists(tmp)) {
    r.failed = true;
    r.log = read_text(log);
    if (r.log.size() > 4000) r.log = r.log.substr(0, 4000) + "\n[... log truncated]";
    r.kept_source = src.string();
    fs::remove(log, ec);
    fs::remove(tmp, ec);
    return r;
  }
  fs::rename(tmp, so);
  fs::rename(src, dir / (key + build.source_extension), ec);
  fs::remove(log, ec);
  return r;
}

}  // namespace weft
