// Saving and restoring a search's progress: the block searches done (per schedule, with what they
// found) and the verification verdicts reached, so a killed search resumes without losing either.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "search/expr_oracle.h"
#include "search/kernel_search.h"

namespace weft {

struct VerifiedRecord {
  bool equivalent = false;
  bool numerically_ok = false;
  double bound = 1;
  int tests = 0;
  double f32_error = 0;  // f32 candidate vs f64 program: max abs error / max abs output
  std::string detail;
};

struct CheckpointData {
  std::string fingerprint;  // program + configuration; a mismatch means "start afresh"
  std::map<std::string, VerifiedRecord> verified;  // by candidate text
};

// Writes atomically (temp file, then rename).
void save_checkpoint(const std::string& path, const CheckpointData& data, const BlockMemo& memo,
                     const ExprOracle& oracle);
// Loads into `memo` and `data` when the file exists and its fingerprint matches; returns whether
// anything was restored. A corrupt file is a UserError.
bool load_checkpoint(const std::string& path, const std::string& fingerprint, CheckpointData& data,
                     BlockMemo& memo, ExprOracle& oracle);

}  // namespace weft
