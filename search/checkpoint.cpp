// JSON checkpoints of the search.
#include "search/checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

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
    op.kind = static_cast<OpKind>(o.at(0).get<int>());
    WEFT_CHECK(static_cast<int>(op.kind) < kNumOpKinds, "bad op kind");
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
  json memo_json = json::array();
  for (const auto& [key, results] : memo.snapshot()) {
    std::lock_guard<std::mutex> lock(results->mu);
    json schedules = json::array(), done = json::array();
    for (const BlockSchedule& s : results->schedules) schedules.push_back(schedule_json(s));
    for (size_t i = 0; i < results->schedules.size(); ++i) {
      if (!results->done[i]) continue;
      json sketches = json::array();
      for (const BlockSketch& sk : results->per_schedule[i])
        sketches.push_back(sketch_json(sk, oracle));
      done.push_back({{"index", i}, {"states", results->states[i]}, {"sketches", sketches}});
    }
    memo_json.push_back({{"key", key}, {"schedules", schedules}, {"done", done}});
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
  json root = {{"format", "weft-checkpoint-2"},
               {"fingerprint", data.fingerprint},
               {"memo", memo_json},
               {"verified", verified}};
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw UserError(SourceLoc{path}, "cannot write the checkpoint file");
    out << root.dump() << "\n";
    out.flush();
    if (!out) throw UserError(SourceLoc{path}, "writing the checkpoint failed (disk full?)");
  }
  std::filesystem::rename(tmp, path);
}

bool load_checkpoint(const std::string& path, const std::string& fingerprint, CheckpointData& data,
                     BlockMemo& memo, ExprOracle& oracle) {
  std::ifstream in(path);
  if (!in) return false;
  json root;
  try {
    root = json::parse(in);
    if (root.at("format") != "weft-checkpoint-2")
      throw UserError(SourceLoc{path}, fmt::format("checkpoint format {} (this weft reads "
                                                   "weft-checkpoint-2); delete it to start afresh",
                                                   root.at("format").dump()));
    if (root.at("fingerprint") != fingerprint) return false;
    for (const json& e : root.at("memo")) {
      auto r = std::make_shared<BlockResults>();
      for (const json& s : e.at("schedules")) r->schedules.push_back(schedule_from(s));
      r->per_schedule.resize(r->schedules.size());
      r->done.assign(r->schedules.size(), false);
      r->states.assign(r->schedules.size(), 0);
      for (const json& d : e.at("done")) {
        size_t i = d.at("index").get<size_t>();
        if (i >= r->schedules.size())
          throw UserError(SourceLoc{path}, "corrupt checkpoint (schedule index)");
        r->done[i] = true;
        r->states[i] = d.at("states").get<int64_t>();
        for (const json& sk : d.at("sketches"))
          r->per_schedule[i].push_back(sketch_from(sk, oracle));
      }
      memo.restore(e.at("key").get<std::string>(), r);
    }
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
