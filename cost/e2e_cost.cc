#include "cost/e2e_cost.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cost/graph_work.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/device_executor.h"
#include "kernels/executor.h"
#include "kernels/fold.h"

namespace rewire {
namespace fs = std::filesystem;

StatusOr<std::unique_ptr<E2eCostModel>> E2eCostModel::Create(const E2eCostOptions& options,
                                                             std::shared_ptr<CostCache> cache) {
  REWIRE_RETURN_IF_ERROR(ValidateTimingOptions(options.timing));
  if (options.statistic != "min" && options.statistic != "median") {
    return InvalidArgument("e2e: the statistic is min or median, not '" + options.statistic + "'");
  }
  if (options.num_threads < 0) return InvalidArgument("e2e: threads must be >= 0");
  std::unique_ptr<OrtRunner> ort;
  std::string key = "e2e:" + options.runtime;
  if (options.runtime == "ort") {
    OrtRunnerOptions ro;
    ro.threads = options.num_threads;
    REWIRE_ASSIGN_OR_RETURN(ort, OrtRunner::Start(ro));
    key += ":" + ort->version();
  } else if (options.runtime.rfind("cuda", 0) == 0) {
    REWIRE_ASSIGN_OR_RETURN(const ExecDevice device, ParseExecDevice(options.runtime));
    REWIRE_RETURN_IF_ERROR(CheckExecDevice(device));
  } else if (options.runtime != "reference") {
    return InvalidArgument("unknown end-to-end runtime '" + options.runtime +
                           "' (known: ort, reference, cuda, cuda:N)");
  }
  key += ":threads=" + std::to_string(options.num_threads);
  return std::unique_ptr<E2eCostModel>(
      new E2eCostModel(options, std::move(ort), std::move(key), std::move(cache)));
}

E2eCostModel::E2eCostModel(const E2eCostOptions& options, std::unique_ptr<OrtRunner> ort,
                           std::string key, std::shared_ptr<CostCache> cache)
    : options_(options),
      ort_(std::move(ort)),
      memo_(std::move(key), std::move(cache), options.measure_budget) {}

E2eCostModel::~E2eCostModel() = default;

std::string E2eCostModel::Name() const {
  return fmt::format("e2e:{}({}{} threads)", options_.runtime, ort_ ? ort_->version() + ", " : "",
                     options_.num_threads ? std::to_string(options_.num_threads) : "default");
}

namespace {
/// The graph as it would be written and run: weight-only subgraphs folded into weights.
StatusOr<Graph> Folded(const Graph& graph) {
  Graph folded = graph;
  REWIRE_RETURN_IF_ERROR(FoldWeightSubgraphs(folded).status());
  return folded;
}
}  // namespace

StatusOr<double> E2eCostModel::GraphCostMs(const Graph& graph) {
  REWIRE_ASSIGN_OR_RETURN(const Graph folded, Folded(graph));
  const std::string key = fmt::format("graph:{:016x}", folded.Hash());
  return memo_.Get(
      key, [&] { return Measure(folded); }, [&] { return GraphWorkJson(WorkOf(folded)); });
}

StatusOr<double> E2eCostModel::Remeasure(const Graph& graph) {
  REWIRE_ASSIGN_OR_RETURN(const Graph folded, Folded(graph));
  return Measure(folded);
}

StatusOr<double> E2eCostModel::Measure(const Graph& folded) {
  if (options_.runtime == "ort") return MeasureInOrt(folded);
  DeviceRunOptions run;
  run.device = options_.runtime == "reference" ? "cpu" : options_.runtime;
  run.num_threads = options_.num_threads;
  REWIRE_ASSIGN_OR_RETURN(const DeviceLatency l,
                          MeasureGraphLatencyOn(folded, options_.timing, run, options_.seed));
  return options_.statistic == "min" ? l.stats.min_ms : l.stats.median_ms;
}

StatusOr<double> E2eCostModel::MeasureInOrt(const Graph& folded) {
  REWIRE_ASSIGN_OR_RETURN(const std::string bytes, ExportOnnxBytes(folded));
  const fs::path path = fs::temp_directory_path() / ("rewire-e2e-" + std::to_string(getpid()) +
                                                     "-" + std::to_string(files_++) + ".onnx");
  {
    std::ofstream f(path, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) return DataLoss(path.string() + ": write failed");
  }
  const Status loaded = ort_->Load("graph", path.string());
  std::error_code ec;
  fs::remove(path, ec);
  REWIRE_RETURN_IF_ERROR(loaded);
  NamedTensors feed;
  for (const auto& [name, t] : RandomInputs(folded, options_.seed)) feed.emplace_back(name, *t);
  REWIRE_ASSIGN_OR_RETURN(const OrtTiming t, ort_->Time("graph", feed, options_.timing.warmups,
                                                        options_.timing.repeats));
  REWIRE_RETURN_IF_ERROR(ort_->Unload("graph"));
  if (t.times_ms.empty()) return Internal("ONNX Runtime timed no run");
  return options_.statistic == "min" ? *std::min_element(t.times_ms.begin(), t.times_ms.end())
                                     : t.median_ms;
}

}  // namespace rewire
