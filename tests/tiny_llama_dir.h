// examples/models/tiny_llama.wmod compiled for h100 into a directory at some bindings, with a
// short search and no build: what the persistent-kernel and decode tests run it from.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "driver/compile_to_dir.h"
#include "driver/model_file.h"
#include "tests/test_util.h"

namespace weft::test {

// Writes WORK/NAME (the region cache in WORK/cache) and returns the model it compiled.
inline ModelFile compile_tiny_llama(const std::filesystem::path& work, const std::string& name,
                                    std::vector<SymBinding> bindings, double time_budget_s) {
  SymProver prover;
  ModelFile model = load_model_file(source_path("examples/models/tiny_llama.wmod"), prover, {});
  ModelDirOptions options;
  options.target = "h100";
  options.bindings = std::move(bindings);
  options.time_budget_s = time_budget_s;
  options.state_budget = 100;
  options.no_build = true;
  options.cache_dir = (work / "cache").string();
  compile_model_to_dir(model, prover, (work / name).string(), options);
  return model;
}

}  // namespace weft::test
