// `rewire bench e2e`: the noise floor of an end-to-end cost model (cost/e2e_cost.h). The same
// graph measured again and again - in one runtime process, and in fresh ones - as an e2e cost
// model measures a search's candidates: the spread of these figures is the smallest difference
// between two graphs that such a model can tell.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cost/e2e_cost.h"
#include "graph/clock.h"

namespace rewire::cli {
namespace {

struct E2eBenchOptions {
  ModelOptions model;
  E2eCostOptions cost;
  int runs = 5;
  int processes = 3;
};

/// "median m ms, min a, max b: spread s%" of `ms`.
std::string Spread(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  char line[160];
  std::snprintf(line, sizeof line, "median %.4f ms, min %.4f, max %.4f: spread %.1f%%", Median(ms),
                ms.front(), ms.back(), 100.0 * (ms.back() / ms.front() - 1));
  return line;
}

void Run(const E2eBenchOptions& o) {
  const Graph g = LoadModel(o.model);
  std::printf("model %s: %d operators; %d warm-up and %d timed runs per measurement, their %s\n",
              o.model.model.c_str(), g.NumOperators(), o.cost.timing.warmups, o.cost.timing.repeats,
              o.cost.statistic.c_str());
  // Fresh runtimes: the first measurement a new model makes, as a search's first graph.
  std::vector<double> first;
  std::vector<double> warm;
  for (int p = 0; p < o.processes; ++p) {
    auto model = Take(E2eCostModel::Create(o.cost));
    first.push_back(Take(model->Remeasure(g)));
    std::printf("runtime %d  %s: first %.4f ms, then", p + 1, model->Name().c_str(), first.back());
    for (int r = 1; r < o.runs; ++r) {
      warm.push_back(Take(model->Remeasure(g)));
      std::printf(" %.4f", warm.back());
    }
    std::printf("\n");
  }
  std::printf("first measurements  %s\n", Spread(first).c_str());
  if (!warm.empty()) std::printf("later measurements  %s\n", Spread(warm).c_str());
}

}  // namespace

void RegisterBenchE2e(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "e2e", "The noise floor of an end-to-end cost model: one graph measured again and again");
  auto o = std::make_shared<E2eBenchOptions>();
  AddModelOptions(*cmd, o->model);
  cmd->add_option("--runtime", o->cost.runtime, "ort | reference | cuda")->capture_default_str();
  cmd->add_option("--threads", o->cost.num_threads, "Intra-op threads (0: the runtime's default)")
      ->capture_default_str();
  cmd->add_option("--warmups", o->cost.timing.warmups, "Untimed runs per measurement")
      ->capture_default_str();
  cmd->add_option("--repeats", o->cost.timing.repeats, "Timed runs per measurement (median)")
      ->capture_default_str();
  cmd->add_option("--statistic", o->cost.statistic, "min | median of the timed runs")
      ->capture_default_str();
  cmd->add_option("--runs", o->runs, "Measurements per runtime process")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--processes", o->processes, "Fresh runtime processes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([o]() { Run(*o); });
}

}  // namespace rewire::cli
