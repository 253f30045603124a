// The files `weft optimize` leaves in its output directory, built from an OptimizeResult:
// best.weft and top-N.weft (the verified µGraphs with a header comment), summary.json (what the
// same input and configuration reproduce byte for byte) and timing.json (wall-clock figures).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/optimize.h"

namespace weft {

// An error bound as a power of two, rounded down: "2^-98"; "0" for an exact result.
std::string error_bound_text(double bound);

// A result file's text: a two-line header (rank, predicted time, verification) and the µGraph.
std::string candidate_file_text(const RankedCandidate& candidate, int rank,
                                const std::string& target);

// What `weft optimize` (and `python -m weft optimize`) prints when done: the search figures, the
// best µGraph's prediction and verification, and the files written to `out_dir`. `name`: the
// program's (or its file's).
std::string optimize_summary_text(const OptimizeResult& result, const std::string& name,
                                  const std::string& out_dir);

// One progress report as a line (no line end). Search phase: elapsed time, states and their
// rate, pruned, block graphs, candidates, the best prediction so far, accounted memory.
// Verification phase: how many of the top-k are verified, candidates checked, and whether the
// time budget stopped verification.
std::string optimize_progress_line(const OptimizeProgress& progress);

// `input_file`: the program's file as given; the summary records its file name only.
nlohmann::json optimize_summary_json(const OptimizeResult& result, const std::string& input_file);
nlohmann::json optimize_timing_json(const OptimizeResult& result);

// Writes every file into `dir` (created when missing) and returns their names, in the order
// written: top-1.weft, best.weft, top-2.weft, ..., summary.json, timing.json. A file that cannot
// be written is a UserError.
std::vector<std::string> write_optimize_report(const std::string& dir, const OptimizeResult& result,
                                               const std::string& input_file);

}  // namespace weft
