// Content-addressed cache of compiled shared libraries: generated source in, loadable .so out.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace weft {

// 64-bit FNV-1a: the cache key of an artifact (over its source and everything that shapes it).
uint64_t content_hash(std::string_view s);

// The cache directory: `configured` if non-empty, else $WEFT_CACHE_DIR, $XDG_CACHE_HOME/weft,
// ~/.cache/weft, /tmp/weft-cache.
std::string default_cache_directory(const std::string& configured);

struct CacheBuild {
  std::string configured_dir;  // empty: default_cache_directory's rules, temp dir as fallback
  std::string key_material;    // compiler, flags, versions: hashed with the source
  std::string source;
  std::string source_extension;  // ".cpp", ".cu"
  // The shell command compiling `src` into the shared object `out` (its output is captured).
  std::function<std::string(const std::string& src, const std::string& out)> command;
};

struct CacheResult {
  std::string artifact;     // DIR/KEY.so
  bool from_cache = false;  // no compiler ran
  bool failed = false;      // the compiler failed: command, log and kept_source say how
  std::string command, log, kept_source;
};

// Returns the cached artifact for (key_material, source), compiling it first when absent. The
// compiler writes a private name that is renamed into place, so concurrent processes are safe.
// Throws UserError when the cache directory cannot be created.
CacheResult build_cached(const CacheBuild& build);

}  // namespace weft
