// `rewire bench ops`: what every operator of a model costs under a cost model (cuda: measured
// on the GPU, TASO's way), grouped by operator type, next to the analytic model's estimate.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "cost/cost_registry.h"
#include "cost/measured_cost.h"
#include "graph/clock.h"
#include "graph/files.h"
#include "graph/json.h"

namespace rewire::cli {
namespace {

struct BenchOpsOptions {
  ModelOptions model;
  CostModelOptions cost;
  std::string analytic_device;
  std::string json;
  int top = 10;
};

struct OpRow {
  NodeId id;
  std::string type;
  double ms = 0;
  double analytic_ms = 0;
};

}  // namespace

void RegisterBenchOps(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "ops",
      "Per-operator costs of a model under a cost model (cuda: measured on the GPU), by "
      "operator type, next to the analytic estimate");
  auto o = std::make_shared<BenchOpsOptions>();
  AddModelOptions(*cmd, o->model);
  cmd->add_option("--cost", o->cost.kind, "analytic | cpu | cuda")->capture_default_str();
  cmd->add_option("--device", o->cost.device, "Device profile of --cost (name or path)");
  cmd->add_option("--analytic-device", o->analytic_device,
                  "Device profile of the analytic estimate (default: --device, else h100)");
  cmd->add_option("--cost-cache", o->cost.cache_path, "SQLite cache of measured op costs");
  cmd->add_option("--repeats", o->cost.timing.repeats, "Timed samples per operator (median kept)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warmups", o->cost.timing.warmups, "Untimed runs per operator")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--top", o->top, "Most expensive operators to list")->capture_default_str();
  cmd->add_option("--json", o->json, "Also write every figure as JSON");
  cmd->callback([o]() {
    const Graph g = LoadModel(o->model);
    if (o->cost.devices_dir.empty()) o->cost.devices_dir = DefaultDevicesDir();
    const auto start = Clock::now();
    auto cost = Take(MakeCostModel(o->cost));
    CostModelOptions analytic_opts;
    analytic_opts.kind = "analytic";
    analytic_opts.devices_dir = o->cost.devices_dir;
    analytic_opts.device = !o->analytic_device.empty() ? o->analytic_device
                           : o->cost.kind != "cpu"     ? o->cost.device
                                                       : "";
    auto analytic = Take(MakeCostModel(analytic_opts));
    const CostTable table = Take(CostTable::Build(*cost, g));
    const CostTable estimate = Take(CostTable::Build(*analytic, g));
    const double seconds = SecondsSince(start);

    std::vector<OpRow> rows;
    struct Group {
      int count = 0;
      double ms = 0, analytic_ms = 0;
    };
    std::map<std::string, Group> groups;
    for (NodeId id : g.NodeIds()) {
      const Node& n = g.node(id);
      if (n.IsLeaf()) continue;
      OpRow r{id, n.TypeName(), table.node_ms(id), estimate.node_ms(id)};
      Group& gr = groups[r.type];
      ++gr.count;
      gr.ms += r.ms;
      gr.analytic_ms += r.analytic_ms;
      rows.push_back(std::move(r));
    }
    std::printf("model %s: %d operators, cost %s (%.1f s), analytic %s\n", o->model.model.c_str(),
                g.NumOperators(), cost->Name().c_str(), seconds, analytic->Name().c_str());
    if (const auto* measured = dynamic_cast<const MeasuredCostModel*>(cost.get())) {
      const MeasurementCounts m = measured->measurements();
      std::printf("measured %lld operators (%lld memo hits, %lld cache hits) under key %s\n",
                  static_cast<long long>(m.measured), static_cast<long long>(m.memo_hits),
                  static_cast<long long>(m.cache_hits), measured->device_key().c_str());
    }
    std::printf("%-22s %6s %14s %8s %14s\n", "op", "count", "cost ms", "share", "analytic ms");
    std::vector<std::pair<std::string, Group>> sorted(groups.begin(), groups.end());
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    for (const auto& [type, gr] : sorted) {
      std::printf("%-22s %6d %14.4f %7.1f%% %14.4f\n", type.c_str(), gr.count, gr.ms,
                  table.total_ms() > 0 ? 100 * gr.ms / table.total_ms() : 0.0, gr.analytic_ms);
    }
    std::printf("%-22s %6zu %14.4f %8s %14.4f\n", "total", rows.size(), table.total_ms(), "",
                estimate.total_ms());
    std::vector<OpRow> by_cost = rows;
    std::sort(by_cost.begin(), by_cost.end(),
              [](const OpRow& a, const OpRow& b) { return a.ms > b.ms; });
    if (o->top > 0 && !by_cost.empty()) std::printf("most expensive operators:\n");
    for (int i = 0; i < o->top && i < static_cast<int>(by_cost.size()); ++i) {
      const Node& n = g.node(by_cost[i].id);
      std::printf("  %-40s %-14s %10.4f ms  (analytic %.4f)\n", n.name.c_str(),
                  by_cost[i].type.c_str(), by_cost[i].ms, by_cost[i].analytic_ms);
    }

    if (!o->json.empty()) {
      Json js;
      js["model"] = o->model.model;
      js["cost_model"] = cost->Name();
      js["analytic_model"] = analytic->Name();
      js["operators"] = rows.size();
      js["total_ms"] = JsonDecimal(table.total_ms());
      js["analytic_total_ms"] = JsonDecimal(estimate.total_ms());
      js["seconds"] = JsonDecimal(seconds);
      if (const auto* measured = dynamic_cast<const MeasuredCostModel*>(cost.get())) {
        js["device_key"] = measured->device_key();
        js["measured"] = measured->measurements().measured;
      }
      Json by_op = Json::array();
      for (const auto& [type, gr] : sorted) {
        by_op.push_back(Json{{"op", type},
                             {"count", gr.count},
                             {"ms", JsonDecimal(gr.ms)},
                             {"analytic_ms", JsonDecimal(gr.analytic_ms)}});
      }
      js["by_op"] = std::move(by_op);
      Json ops = Json::array();
      for (const OpRow& row : rows) {
        ops.push_back(Json{{"node", g.node(row.id).name},
                           {"op", row.type},
                           {"ms", JsonDecimal(row.ms)},
                           {"analytic_ms", JsonDecimal(row.analytic_ms)}});
      }
      js["ops"] = std::move(ops);
      if (Status w = WriteFileAtomic(o->json, JsonText(js, 2) + "\n"); !w.ok()) {
        throw CommandError(w.message());
      }
      std::printf("wrote %s\n", o->json.c_str());
    }
  });
}

}  // namespace rewire::cli
