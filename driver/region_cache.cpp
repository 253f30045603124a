// The region cache's files: FNV-1a names, JSON entries, atomic writes, tolerant reads.
#include "driver/region_cache.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "runtime/build_cache.h"

namespace weft {
namespace {

constexpr int kFormat = 1;

}  // namespace

std::string RegionCache::key(const std::string& region_text, const std::string& target,
                             const SymBinding& binding, const SearchConfig& config) {
  nlohmann::json searched = config.to_json();
  for (const char* budget : {"time_budget_s", "state_budget", "memory_budget_mb", "threads",
                             "checkpoint_interval_s", "converge_s", "target"})
    searched.erase(budget);
  return fmt::format("weft region cache {}\ntarget {}\nbinding {}\nsearch {}\n{}", kFormat, target,
                     binding_str(binding), searched.dump(), region_text);
}

std::string RegionCache::path(const std::string& key) const {
  return (std::filesystem::path(dir_) / fmt::format("{:016x}.json", content_hash(key))).string();
}

std::optional<CachedRegion> RegionCache::load(const std::string& key,
                                              std::vector<std::string>& warnings) const {
  if (!enabled()) return std::nullopt;
  std::string file = path(key);
  std::ifstream in(file);
  if (!in) return std::nullopt;
  try {
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(text.str());
    if (j.at("key").get<std::string>() != key) {
      warnings.push_back(fmt::format("cache entry {} holds another region (hash collision)", file));
      return std::nullopt;
    }
    CachedRegion entry;
    entry.graph = parse_graph(j.at("ugraph").get<std::string>(), file);
    entry.origin = j.at("origin").get<std::string>();
    entry.stop = j.at("stop").get<std::string>();
    entry.search_s = j.at("search_s").get<double>();
    return entry;
  } catch (const std::exception& e) {
    warnings.push_back(fmt::format("ignoring the unreadable cache entry {}: {}", file, e.what()));
    return std::nullopt;
  }
}

void RegionCache::store(const std::string& key, const CachedRegion& entry) const {
  if (!enabled()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw UserError(fmt::format("cannot create the cache folder {}: {}", dir_, ec.message()));
  std::string file = path(key);
  // A name of its own per writer, so concurrent compiles never interleave in one file.
  std::string tmp = fmt::format("{}.tmp{}.{}", file, ::getpid(),
                                std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp);
    out << nlohmann::json{{"key", key},
                          {"ugraph", print_graph(entry.graph, false)},
                          {"origin", entry.origin},
                          {"stop", entry.stop},
                          {"search_s", entry.search_s}}
               .dump(1)
        << "\n";
    out.flush();
    if (!out) throw UserError(fmt::format("writing the cache entry {} failed", tmp));
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw UserError(fmt::format("cannot move {} into place: {}", tmp, ec.message()));
}

}  // namespace weft
