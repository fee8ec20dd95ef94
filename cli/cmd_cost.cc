// `rewire cost fit`: a learned performance model (cost/learned_cost.h) fitted on the end-to-end
// measurements a cost cache logged (searches with --cost e2e:*, training runs' measured reward),
// with its error and rank correlation on held-out measurements beside the analytic roofline's.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cost/analytic_cost.h"
#include "cost/cost_cache.h"
#include "cost/device_profile.h"
#include "cost/learned_cost.h"

namespace rewire::cli {
namespace {

struct FitOptions {
  std::vector<std::string> stores;
  std::vector<std::string> test_stores;
  std::string runtime = "e2e:ort";
  std::string out;
  double holdout = 0.25;
  uint64_t seed = 1;
  std::string analytic = "cpu_dev";
  std::string devices_dir;
};

/// The roofline's prediction from a graph's work per operator type: each type's summed work as
/// one roofline (RooflineMs: its launches, then the larger of compute and memory time), a lower
/// bound of the per-operator roofline, which takes the larger of the two operator by operator.
double RooflineOfWork(const GraphWork& work, const DeviceProfile& device) {
  double ms = 0;
  for (const auto& [op, w] : work) {
    ms += RooflineMs(OpWork{w.flops, w.bytes, static_cast<int>(w.count)}, device);
  }
  return ms;
}

struct Scores {
  double spearman = NAN, error = NAN;
};

Scores Score(const std::vector<double>& predicted, const std::vector<double>& measured) {
  return Scores{SpearmanCorrelation(predicted, measured), MeanRelativeError(predicted, measured)};
}

/// One sample per graph of `paths`' logs measured by a runtime starting with `runtime` (a graph
/// measured again keeps its first value); `devices` counts the graphs per runtime key.
std::vector<WorkSample> Samples(const std::vector<std::string>& paths, const std::string& runtime,
                                std::map<std::string, int>& devices) {
  std::map<std::string, WorkSample> by_graph;
  for (const std::string& path : paths) {
    auto store = Take(CostCache::Open(path));
    for (const MeasurementRecord& r : Take(store->MeasurementLog(runtime))) {
      if (r.work.empty() || by_graph.count(r.device + "|" + r.signature)) continue;
      StatusOr<GraphWork> work = ParseGraphWorkJson(r.work);
      if (!work.ok()) continue;
      by_graph[r.device + "|" + r.signature] = WorkSample{std::move(*work), r.cost_ms};
      ++devices[r.device];
    }
  }
  std::vector<WorkSample> samples;
  for (auto& kv : by_graph) samples.push_back(std::move(kv.second));
  return samples;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

void Fit(const FitOptions& o) {
  std::map<std::string, int> devices;
  std::vector<WorkSample> samples = Samples(o.stores, o.runtime, devices);
  std::vector<WorkSample> held = Samples(o.test_stores, o.runtime, devices);
  if (devices.size() > 1) {
    std::string names;
    for (const auto& [d, n] : devices) names += fmt::format("\n  {} ({} graphs)", d, n);
    throw CommandError(
        InvalidArgument("the stores hold graphs measured by several runtimes; "
                        "pick one with --runtime:" +
                        names));
  }
  const std::string stores = Join(o.stores);
  if (samples.size() < 4) {
    throw CommandError(InvalidArgument(fmt::format(
        "{} holds {} graphs measured end to end by {}: at least 4 are needed (measure some with "
        "`rewire optimize --cost e2e:ort --cost-cache {}`, or train with env.reward = \"sparse\")",
        stores, samples.size(), o.runtime, o.stores[0])));
  }
  if (!o.test_stores.empty() && held.empty()) {
    throw CommandError(InvalidArgument("the test stores " + Join(o.test_stores) +
                                       " hold no graph measured by " + o.runtime));
  }
  const std::string runtime = devices.begin()->first;
  std::vector<WorkSample> test, train;
  if (!o.test_stores.empty()) {
    test = std::move(held);
    train = samples;
  } else {
    std::mt19937_64 rng(o.seed);
    std::shuffle(samples.begin(), samples.end(), rng);
    const size_t n =
        std::min(samples.size() - 2, static_cast<size_t>(std::lround(o.holdout * samples.size())));
    test.assign(samples.begin(), samples.begin() + n);
    train.assign(samples.begin() + n, samples.end());
  }

  LearnedCostParams params = Take(FitLearnedCost(train));
  params.runtime = runtime;
  const DeviceProfile device = Take(
      FindDeviceProfile(o.analytic, o.devices_dir.empty() ? DefaultDevicesDir() : o.devices_dir));
  // The roofline's scale is another machine's: scaled by the median measured/predicted ratio of
  // the training graphs, so that its error is comparable (its rank correlation does not change).
  std::vector<double> ratios;
  for (const WorkSample& s : train) ratios.push_back(s.ms / RooflineOfWork(s.work, device));
  std::sort(ratios.begin(), ratios.end());
  const double scale = ratios[ratios.size() / 2];

  auto evaluate = [&](const std::vector<WorkSample>& set) {
    std::vector<double> measured, learned, roofline;
    for (const WorkSample& s : set) {
      measured.push_back(s.ms);
      learned.push_back(PredictMs(params, s.work));
      roofline.push_back(scale * RooflineOfWork(s.work, device));
    }
    return std::make_pair(Score(learned, measured), Score(roofline, measured));
  };
  const auto [learned_train, roofline_train] = evaluate(train);
  const auto [learned_test, roofline_test] = evaluate(test);
  if (o.test_stores.empty()) {
    std::printf("%s: %zu graphs measured by %s; fitted on %zu, %zu held out (seed %llu)\n",
                stores.c_str(), samples.size(), runtime.c_str(), train.size(), test.size(),
                static_cast<unsigned long long>(o.seed));
  } else {
    std::printf("%s: %zu graphs measured by %s, fitted on; %s: %zu held out\n", stores.c_str(),
                train.size(), runtime.c_str(), Join(o.test_stores).c_str(), test.size());
  }
  std::printf("%-34s %22s %22s\n", "", "held out: Spearman, error", "fitted: Spearman, error");
  auto row = [](const std::string& name, const Scores& test, const Scores& fit) {
    std::printf("%-34s %12.3f %8.1f%% %12.3f %8.1f%%\n", name.c_str(), test.spearman,
                100 * test.error, fit.spearman, 100 * fit.error);
  };
  row("learned", learned_test, learned_train);
  row(fmt::format("analytic({}) x {:.3g}", device.name, scale), roofline_test, roofline_train);
  params.fit_summary = fmt::format(
      "fitted on {} graphs of {} ({}); held out {}: Spearman {:.3f}, mean error {:.1f}% "
      "(analytic({}) scaled: {:.3f}, {:.1f}%)",
      train.size(), runtime, stores, test.size(), learned_test.spearman, 100 * learned_test.error,
      device.name, roofline_test.spearman, 100 * roofline_test.error);
  if (!o.out.empty()) {
    // The model written is fitted on every graph of --store; the scores above are of the
    // split's fit.
    LearnedCostParams all = Take(FitLearnedCost(samples));
    all.runtime = runtime;
    all.fit_summary = params.fit_summary;
    Check(SaveLearnedCost(all, o.out));
    std::printf("wrote %s (fitted on all %zu graphs): use it as --cost learned:%s\n", o.out.c_str(),
                samples.size(), o.out.c_str());
  }
}

}  // namespace

void RegisterCost(CLI::App& app) {
  auto* cost = app.add_subcommand(
      "cost", "Cost models: fit the kernel model of this machine's ONNX Runtime, or a linear one");
  cost->require_subcommand(1);
  auto* fit = cost->add_subcommand(
      "fit",
      "Fit a learned performance model (--cost learned:PATH) on the end-to-end measurements "
      "cost caches logged, and score it on held-out graphs beside the analytic roofline");
  auto o = std::make_shared<FitOptions>();
  fit->add_option("--store", o->stores,
                  "A cost cache (--cost-cache, or a training run's <run.dir>/measurements.sqlite) "
                  "to fit on (repeatable)")
      ->required();
  fit->add_option("--test-store", o->test_stores,
                  "Score on these stores' graphs (unseen models, say) instead of holding out a "
                  "part of --store's (repeatable)");
  fit->add_option("--runtime", o->runtime,
                  "Measurements whose runtime key starts with this, e.g. e2e:ort or "
                  "e2e:ort:1.30.0:threads=1")
      ->capture_default_str();
  fit->add_option("--out", o->out, "Write the model (JSON), fitted on every graph");
  fit->add_option("--holdout", o->holdout, "Fraction of the graphs held out to score the fit")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  fit->add_option("--seed", o->seed, "Seed of the held-out draw")->capture_default_str();
  fit->add_option("--analytic", o->analytic, "Device profile of the roofline compared with")
      ->capture_default_str();
  fit->add_option("--devices-dir", o->devices_dir, "Where device profiles are looked up");
  fit->callback([o]() { Fit(*o); });
  RegisterCostProfile(*cost);
}

}  // namespace rewire::cli
