// JSON form of the search configuration (so results record exactly what was searched).
#include "search/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "core/error.h"
#include "core/system_memory.h"

namespace weft {

static nlohmann::json ops_to_json(const std::vector<OpKind>& ops) {
  nlohmann::json a = nlohmann::json::array();
  for (OpKind k : ops) a.push_back(op_info(k).name);
  return a;
}

static std::vector<OpKind> ops_from_json(const nlohmann::json& j, const std::string& key,
                                         const std::string& origin) {
  if (!j.is_array())
    throw UserError(SourceLoc{origin}, fmt::format("'{}' must be a list of operator names", key));
  std::vector<OpKind> out;
  for (const auto& e : j) {
    auto k = e.is_string() ? op_by_name(e.get<std::string>()) : std::nullopt;
    if (!k)
      throw UserError(SourceLoc{origin}, fmt::format("'{}': unknown operator {}", key, e.dump()));
    out.push_back(*k);
  }
  return out;
}

int64_t SearchConfig::default_memory_budget_mb() {
  // Half: the rest is for the verifier, the operating system and whatever else runs (the
  // estimate counts the search's structures, not the allocator's slack).
  int64_t bytes = physical_memory_bytes();
  return bytes > 0 ? std::max<int64_t>(1, bytes / 2 / (int64_t{1} << 20)) : 4096;
}

nlohmann::json SearchConfig::to_json() const {
  return {{"target", target},
          {"max_kernel_ops", max_kernel_ops},
          {"max_block_ops", max_block_ops},
          {"max_kernel_operands", max_kernel_operands},
          {"max_graph_defined_kernels", max_graph_defined_kernels},
          {"max_block_outputs", max_block_outputs},
          {"max_grid_dims", max_grid_dims},
          {"intermediate_variants", intermediate_variants},
          {"min_blocks", min_blocks},
          {"max_blocks", max_blocks},
          {"max_loop", max_loop},
          {"threads_per_block", threads_per_block},
          {"kernel_ops", ops_to_json(kernel_ops)},
          {"block_ops", ops_to_json(block_ops)},
          {"accumulators", ops_to_json(accumulators)},
          {"reduce_to_groups", reduce_to_groups},
          {"split_reductions", split_reductions},
          {"time_budget_s", time_budget_s},
          {"state_budget", state_budget},
          {"memory_budget_mb", memory_budget_mb},
          {"threads", threads},
          {"pruning", pruning},
          {"target_error", target_error},
          {"seed", seed},
          {"top_k", top_k},
          {"checkpoint_interval_s", checkpoint_interval_s}};
}

void SearchConfig::merge_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw UserError(SourceLoc{origin}, "a search configuration is a JSON object");
  for (const auto& [key, value] : j.items()) {
    auto bad = [&](const char* want) {
      return UserError(SourceLoc{origin},
                       fmt::format("'{}' must be {}, got {}", key, want, value.dump()));
    };
    auto positive_int = [&](auto& field) {
      if (!value.is_number_integer() || value.get<int64_t>() < 0)
        throw bad("a non-negative integer");
      field = static_cast<std::remove_reference_t<decltype(field)>>(value.get<int64_t>());
    };
    auto number = [&](double& field) {
      if (!value.is_number() || value.get<double>() < 0) throw bad("a non-negative number");
      field = value.get<double>();
    };
    auto boolean = [&](bool& field) {
      if (!value.is_boolean()) throw bad("true or false");
      field = value.get<bool>();
    };
    if (key == "target") {
      if (!value.is_string()) throw bad("a target name");
      target = value.get<std::string>();
    } else if (key == "max_kernel_ops")
      positive_int(max_kernel_ops);
    else if (key == "max_block_ops")
      positive_int(max_block_ops);
    else if (key == "max_kernel_operands")
      positive_int(max_kernel_operands);
    else if (key == "max_graph_defined_kernels")
      positive_int(max_graph_defined_kernels);
    else if (key == "max_block_outputs")
      positive_int(max_block_outputs);
    else if (key == "max_grid_dims") {
      positive_int(max_grid_dims);
      if (max_grid_dims < 1 || max_grid_dims > 3) throw bad("1, 2 or 3");
    } else if (key == "intermediate_variants")
      positive_int(intermediate_variants);
    else if (key == "min_blocks")
      positive_int(min_blocks);
    else if (key == "max_blocks")
      positive_int(max_blocks);
    else if (key == "max_loop")
      positive_int(max_loop);
    else if (key == "threads_per_block") {
      if (!value.is_array() || value.empty()) throw bad("a non-empty list of integers");
      threads_per_block.clear();
      for (const auto& e : value) {
        if (!e.is_number_integer() || e.get<int64_t>() < 1)
          throw bad("a list of positive integers");
        threads_per_block.push_back(e.get<int64_t>());
      }
    } else if (key == "kernel_ops")
      kernel_ops = ops_from_json(value, key, origin);
    else if (key == "block_ops")
      block_ops = ops_from_json(value, key, origin);
    else if (key == "accumulators")
      accumulators = ops_from_json(value, key, origin);
    else if (key == "reduce_to_groups")
      boolean(reduce_to_groups);
    else if (key == "split_reductions")
      boolean(split_reductions);
    else if (key == "time_budget_s")
      number(time_budget_s);
    else if (key == "state_budget")
      positive_int(state_budget);
    else if (key == "memory_budget_mb")
      positive_int(memory_budget_mb);
    else if (key == "threads")
      positive_int(threads);
    else if (key == "pruning")
      boolean(pruning);
    else if (key == "target_error") {
      number(target_error);
      if (target_error <= 0 || target_error >= 1) throw bad("a probability in (0, 1)");
    } else if (key == "seed") {
      if (!value.is_number_unsigned()) throw bad("a non-negative integer");
      seed = value.get<uint64_t>();
    } else if (key == "top_k")
      positive_int(top_k);
    else if (key == "checkpoint_interval_s")
      number(checkpoint_interval_s);
    else
      throw UserError(SourceLoc{origin}, fmt::format("unknown configuration key '{}'", key));
  }
  for (OpKind k : accumulators)
    if (!is_accumulator(k))
      throw UserError(SourceLoc{origin},
                      fmt::format("'{}' is not an accumulator", op_info(k).name));
}

SearchConfig SearchConfig::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(SourceLoc{path}, "cannot read the configuration file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(SourceLoc{path}, fmt::format("not valid JSON: {}", e.what()));
  }
  SearchConfig c;
  c.merge_json(j, path);
  return c;
}

}  // namespace weft
