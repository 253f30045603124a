// JSON checkpoints of the search.
#include "driver/checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.h"

namespace weft {
namespace {

using nlohmann::json;

json schedule_json(const BlockSchedule& s) {
  json iters = json::array();
  for (const IterChoice& c : s.iters)
    iters.push_back({c.imap[0], c.imap[1], c.imap[2], c.fmap, c.post});
  return {{"grid", s.grid}, {"loop", s.loop}, {"iters", iters}};
}

BlockSchedule schedule_from(const json& j) {
  BlockSchedule s;
  s.grid = j.at("grid").get<std::array<int64_t, 3>>();
  s.loop = j.at("loop").get<int64_t>();
  for (const json& c : j.at("iters")) {
    IterChoice ic;
    for (int g = 0; g < 3; ++g) ic.imap[g] = c.at(g).get<int8_t>();
    ic.fmap = c.at(3).get<int8_t>();
    ic.post = c.at(4).get<bool>();
    s.iters.push_back(ic);
  }
  return s;
}

json sketch_json(const BlockSketch& sk, const ExprOracle& oracle) {
  json ops = json::array(), saves = json::array(), types = json::array(), terms = json::array();
  for (const SketchOp& o : sk.ops)
    ops.push_back(
        {static_cast<int>(o.kind), o.a, o.b, o.dim, o.constant, static_cast<int>(o.stage), o.to});
  for (const SketchSave& sv : sk.saves)
    saves.push_back({sv.value, sv.omap[0], sv.omap[1], sv.omap[2]});
  for (const TensorType& t : sk.output_types) types.push_back({static_cast<int>(t.dtype), t.shape});
  for (TermRef t : sk.output_terms) terms.push_back(oracle.text(t));
  return {{"schedule", schedule_json(sk.schedule)},
          {"ops", ops},
          {"saves", saves},
          {"types", types},
          {"terms", terms},
          {"classes", sk.output_classes},
          {"parts", sk.output_parts},
          {"part_classes", sk.output_part_classes}};
}

BlockSketch sketch_from(const json& j, ExprOracle& oracle) {
  BlockSketch sk;
  sk.schedule = schedule_from(j.at("schedule"));
  for (const json& o : j.at("ops")) {
    SketchOp op;
    const int kind = o.at(0).get<int>();
    WEFT_CHECK(kind >= 0 && kind < kNumOpKinds, "bad op kind {}", kind);
    op.kind = static_cast<OpKind>(kind);
    WEFT_CHECK(!is_model_only(op.kind), "model-level op kind {} in a block sketch", kind);
    op.a = o.at(1).get<int8_t>();
    op.b = o.at(2).get<int8_t>();
    op.dim = o.at(3).get<int8_t>();
    op.constant = o.at(4).get<int16_t>();
    op.stage = static_cast<Stage>(o.at(5).get<int>());
    op.to = o.at(6).get<int64_t>();
    sk.ops.push_back(op);
  }
  for (const json& s : j.at("saves")) {
    SketchSave sv;
    sv.value = s.at(0).get<int8_t>();
    for (int g = 0; g < 3; ++g) sv.omap[g] = s.at(g + 1).get<int8_t>();
    sk.saves.push_back(sv);
  }
  for (const json& t : j.at("types"))
    sk.output_types.push_back(
        TensorType{static_cast<DType>(t.at(0).get<int>()), t.at(1).get<Shape>()});
  for (const json& t : j.at("terms")) sk.output_terms.push_back(oracle.parse(t.get<std::string>()));
  sk.output_classes = j.at("classes").get<std::vector<DimClassList>>();
  sk.output_parts = j.at("parts").get<std::vector<std::array<int64_t, 4>>>();
  sk.output_part_classes = j.at("part_classes").get<std::vector<DimClassList>>();
  return sk;
}

}  // namespace

void save_checkpoint(const std::string& path, const CheckpointData& data, const BlockMemo& memo,
                     const ExprOracle& oracle) {
  // Written piece by piece, one block graph at a time: a JSON document of the whole memo would
  // take several times the memo's own memory, which may be most of the memory budget. The text is
  // what json::dump of the whole document gives (keys in order).
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw UserError(SourceLoc{path}, "cannot write the checkpoint file");
    out << "{\"fingerprint\":" << json(data.fingerprint).dump()
        << ",\"format\":\"weft-checkpoint-2\",\"memo\":[";
    bool first_entry = true;
    for (const auto& [key, results] : memo.snapshot()) {
      std::lock_guard<std::mutex> lock(results->mu);
      out << (first_entry ? "" : ",") << "{\"done\":[";
      first_entry = false;
      bool first_done = true;
      for (size_t i = 0; i < results->schedules.size(); ++i) {
        // A truncated schedule (memory budget) is redone on resume, like an unfinished one.
        if (!results->done[i] || results->truncated[i]) continue;
        out << (first_done ? "" : ",") << "{\"index\":" << i << ",\"sketches\":[";
        first_done = false;
        bool first_sketch = true;
        for (const BlockSketch& sk : results->per_schedule[i]) {
          out << (first_sketch ? "" : ",") << sketch_json(sk, oracle).dump();
          first_sketch = false;
        }
        out << "],\"states\":" << results->states[i] << "}";
      }
      json schedules = json::array();
      for (const BlockSchedule& s : results->schedules) schedules.push_back(schedule_json(s));
      out << "],\"key\":" << json(key).dump() << ",\"schedules\":" << schedules.dump() << "}";
    }
    json verified = json::array();
    for (const auto& [text, v] : data.verified)
      verified.push_back({{"text", text},
                          {"equivalent", v.equivalent},
                          {"numerically_ok", v.numerically_ok},
                          {"bound", v.bound},
                          {"tests", v.tests},
                          {"f32_error", v.f32_error},
                          {"detail", v.detail}});
    out << "],\"verified\":" << verified.dump() << "}\n";
    out.flush();
    if (!out) throw UserError(SourceLoc{path}, "writing the checkpoint failed (disk full?)");
  }
  std::filesystem::rename(tmp, path);
}

bool load_checkpoint(const std::string& path, const std::string& fingerprint, CheckpointData& data,
                     BlockMemo& memo, ExprOracle& oracle) {
  std::ifstream in(path);
  if (!in) return false;
  // Parsed with a callback that turns each block graph, finished schedule and memo entry into the
  // search's compact form as soon as it is read and drops its JSON, so the document is never held
  // whole (it can be several times the memory of the memo it describes). Depths: root 0, memo 1,
  // entry 2, done 3, one done schedule 4, its sketches 5, one sketch 6.
  std::vector<std::string> keys(8);  // the key being read at each depth
  std::optional<std::string> format, file_fingerprint;
  bool skip = false;  // another program or configuration: read nothing more into the oracle
  std::vector<std::pair<size_t, int64_t>> done;  // (schedule index, states) of the entry being read
  std::vector<std::vector<BlockSketch>> done_sketches;
  std::vector<BlockSketch> sketches;  // of the schedule being read
  std::vector<std::pair<std::string, std::shared_ptr<BlockResults>>> entries;
  auto in_memo = [&](int depth) { return depth >= 2 && keys[1] == "memo"; };
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    using E = json::parse_event_t;
    if (event == E::key) {
      if (depth < static_cast<int>(keys.size()))
        keys[static_cast<size_t>(depth)] = parsed.get<std::string>();
      return true;
    }
    if (event == E::value && depth == 1 && keys[1] == "format") {
      format = parsed.get<std::string>();
      if (*format != "weft-checkpoint-2")
        throw UserError(SourceLoc{path},
                        fmt::format("checkpoint format {} (this weft reads "
                                    "weft-checkpoint-2); delete it to start afresh",
                                    parsed.dump()));
    }
    if (event == E::value && depth == 1 && keys[1] == "fingerprint") {
      file_fingerprint = parsed.get<std::string>();
      skip = *file_fingerprint != fingerprint;
    }
    if (event != E::object_end || !in_memo(depth)) return true;
    if (depth == 6 && keys[3] == "done" && keys[5] == "sketches") {
      if (!skip) sketches.push_back(sketch_from(parsed, oracle));
      return false;
    }
    if (depth == 4 && keys[3] == "done") {
      done.emplace_back(parsed.at("index").get<size_t>(), parsed.at("states").get<int64_t>());
      done_sketches.push_back(std::move(sketches));
      sketches.clear();
      return false;
    }
    if (depth == 2) {
      auto r = std::make_shared<BlockResults>();
      for (const json& s : parsed.at("schedules")) r->schedules.push_back(schedule_from(s));
      r->per_schedule.resize(r->schedules.size());
      r->done.assign(r->schedules.size(), false);
      r->states.assign(r->schedules.size(), 0);
      r->truncated.assign(r->schedules.size(), false);
      for (size_t d = 0; d < done.size(); ++d) {
        size_t i = done[d].first;
        if (i >= r->schedules.size())
          throw UserError(SourceLoc{path}, "corrupt checkpoint (schedule index)");
        r->done[i] = true;
        r->states[i] = done[d].second;
        r->per_schedule[i] = std::move(done_sketches[d]);
        r->per_schedule[i].shrink_to_fit();
      }
      done.clear();
      done_sketches.clear();
      if (!skip) entries.emplace_back(parsed.at("key").get<std::string>(), std::move(r));
      return false;
    }
    return true;
  };
  json root;
  try {
    root = json::parse(in, callback);
    if (!format || !file_fingerprint || !root.contains("verified"))
      throw UserError(SourceLoc{path},
                      "corrupt checkpoint (missing fields); delete it to start afresh");
    if (*file_fingerprint != fingerprint) return false;
    for (auto& [key, r] : entries) memo.restore(key, std::move(r));
    for (const json& v : root.at("verified")) {
      VerifiedRecord rec;
      rec.equivalent = v.at("equivalent").get<bool>();
      rec.numerically_ok = v.at("numerically_ok").get<bool>();
      rec.bound = v.at("bound").get<double>();
      rec.tests = v.at("tests").get<int>();
      rec.f32_error = v.at("f32_error").get<double>();
      rec.detail = v.at("detail").get<std::string>();
      data.verified[v.at("text").get<std::string>()] = rec;
    }
  } catch (const json::exception& e) {
    throw UserError(SourceLoc{path},
                    fmt::format("corrupt checkpoint ({}); delete it to start afresh", e.what()));
  }
  data.fingerprint = fingerprint;
  return true;
}

}  // namespace weft
