// `weft cost FILE [--target NAME] [--json]`: the cost model's per-kernel breakdown, the total and
// the roofline floor of the program.
#include <fmt/format.h>

#include <iostream>

#include "core/target.h"
#include "cost/cost_json.h"
#include "cost/cost_model.h"
#include "tools/weft/command.h"

namespace {

std::string bytes_str(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.2f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} KB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string flops_str(double f) {
  if (f >= 1e9) return fmt::format("{:.2f} G", f / 1e9);
  if (f >= 1e6) return fmt::format("{:.2f} M", f / 1e6);
  if (f >= 1e3) return fmt::format("{:.1f} K", f / 1e3);
  return fmt::format("{:.0f}", f);
}

std::string us(double s) {
  return fmt::format("{:.2f}", s * 1e6);
}

void print_report(const weft::Graph& g, const weft::Target& t) {
  weft::CostReport r = weft::predict(g, t);
  weft::Roofline floor = weft::roofline(g, t);
  fmt::print("{} on {} ({})\n", g.name.empty() ? "program" : g.name, t.name, t.description);
  fmt::print(
      "{:<3} {:<12} {:<8} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6} {:>5} {:>5} {:>9} {:>5} "
      "{:>9} {:>9} {:>9}  {}\n",
      "#", "kernel", "op", "dram", "l2 hit", "smem", "tc flop", "cc flop", "blocks", "loop",
      "waves", "smem/blk", "b/SM", "mem us", "comp us", "time us", "bound");
  int i = 0;
  for (const weft::KernelCost& k : r.kernels) {
    ++i;
    if (!k.launched) {
      fmt::print("{:<3} {:<12} {:<8} (a view: no kernel)\n", i, k.name, k.op);
      continue;
    }
    auto opt = [](int64_t v) { return v > 0 ? fmt::format("{}", v) : std::string("-"); };
    fmt::print(
        "{:<3} {:<12} {:<8} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6} {:>5} {:>5} {:>9} {:>5} "
        "{:>9} {:>9} {:>9}  {}\n",
        i, k.name, k.op, bytes_str(k.dram_bytes), bytes_str(k.l2_hit_bytes),
        bytes_str(k.smem_bytes), flops_str(k.tensor_flops), flops_str(k.cuda_flops), opt(k.blocks),
        k.graph_defined ? fmt::format("{}", k.loop) : std::string("-"), opt(k.waves),
        k.graph_defined ? bytes_str(static_cast<double>(k.smem_per_block)) : std::string("-"),
        opt(k.blocks_per_sm), us(k.memory_s), us(k.compute_s), us(k.time_s),
        weft::bound_name(k.bound));
  }
  fmt::print("total: {} us predicted, {} kernel launch{}\n", us(r.total_s), r.kernel_launches(),
             r.kernel_launches() == 1 ? "" : "es");
  fmt::print(
      "roofline floor: {} us (max of {} moved once / {:.2f} TB/s = {} us, {} tensor + {} "
      "CUDA-core flop = {} us); predicted / floor = {:.2f}x\n",
      us(floor.floor_s), bytes_str(floor.bytes), t.dram_bytes_per_s / 1e12, us(floor.memory_s),
      flops_str(floor.tensor_flops), flops_str(floor.cuda_flops), us(floor.compute_s),
      floor.floor_s > 0 ? r.total_s / floor.floor_s : 0.0);
}

weft::cli::Register reg(
    "cost", "Predict a µGraph's run time on a target, kernel by kernel, with its roofline floor",
    [](CLI::App& sub) {
      auto file = std::make_shared<std::string>();
      auto target = std::make_shared<std::string>();
      auto json = std::make_shared<bool>(false);
      sub.add_option("FILE", *file, "µGraph file (.weft)")->required();
      sub.add_option(
          "--target", *target,
          "hardware target (see `weft targets`; default: " + weft::default_target().name + ")");
      sub.add_flag("--json", *json, "print the report as JSON (times in microseconds)");
      return [file, target, json]() -> int {
        const weft::Target& t =
            target->empty() ? weft::default_target() : weft::target_by_name(*target);
        weft::Graph g = weft::load_graph(*file);
        if (*json) {
          nlohmann::ordered_json j = weft::cost_report_json(weft::predict(g, t));
          j["roofline"] = weft::roofline_json(weft::roofline(g, t));
          std::cout << j.dump(2) << "\n";
        } else {
          print_report(g, t);
        }
        return 0;
      };
    });

}  // namespace
