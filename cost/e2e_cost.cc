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
  if (!(options.timeout_s > 0)) return InvalidArgument("e2e: the timeout must be > 0 seconds");
  std::unique_ptr<OrtRunner> ort;
  std::string key = "e2e:" + options.runtime;
  InjectedFault fault;
  if (options.runtime == "ort") {
    OrtRunnerOptions ro;
    ro.threads = options.num_threads;
    ro.timeout_s = options.timeout_s;
    REWIRE_ASSIGN_OR_RETURN(ort, OrtRunner::Start(ro));
    key += ":" + ort->version();
  } else if (options.runtime.rfind("cuda", 0) == 0) {
    REWIRE_ASSIGN_OR_RETURN(const ExecDevice device, ParseExecDevice(options.runtime));
    REWIRE_RETURN_IF_ERROR(CheckExecDevice(device));
  } else if (options.runtime == "reference") {
    REWIRE_ASSIGN_OR_RETURN(fault, ReferenceFaultFromEnv());
  } else {
    return InvalidArgument("unknown end-to-end runtime '" + options.runtime +
                           "' (known: ort, reference, cuda, cuda:N)");
  }
  key += ":threads=" + std::to_string(options.num_threads);
  auto model = std::unique_ptr<E2eCostModel>(
      new E2eCostModel(options, std::move(ort), std::move(key), std::move(cache)));
  model->reference_fault_ = fault;
  return model;
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
  const uint64_t hash = folded.Hash();
  const auto known = unmeasurable_reasons_.find(hash);
  if (known != unmeasurable_reasons_.end()) return Unmeasurable(known->second);
  const std::string key = fmt::format("graph:{:016x}", hash);
  bool crashed_or_hung = false;
  StatusOr<double> ms = memo_.Get(
      key,
      [&]() -> StatusOr<double> {
        StatusOr<double> m = Measure(folded);
        crashed_or_hung = !m.ok() && (m.status().code() == StatusCode::kDeadlineExceeded ||
                                      m.status().code() == StatusCode::kUnavailable);
        return m;
      },
      [&] { return GraphWorkJson(WorkOf(folded)); });
  if (!crashed_or_hung) return ms;
  // Never again in this process: the runtime goes on (ONNX Runtime restarts, the reference
  // executor forks afresh) for other graphs.
  const std::string reason = ms.status().message();
  unmeasurable_reasons_.emplace(hash, reason);
  unmeasurable_.push_back(UnmeasurableGraph{hash, reason});
  return Unmeasurable(reason);
}

MeasurementCounts E2eCostModel::measurements() const {
  MeasurementCounts c = memo_.counts();
  c.unmeasurable = static_cast<int64_t>(unmeasurable_.size());
  return c;
}

StatusOr<double> E2eCostModel::Remeasure(const Graph& graph) {
  REWIRE_ASSIGN_OR_RETURN(const Graph folded, Folded(graph));
  return Measure(folded);
}

StatusOr<double> E2eCostModel::Measure(const Graph& folded) {
  if (options_.runtime == "ort") return MeasureInOrt(folded);
  if (options_.runtime != "reference") {
    // CUDA does not survive fork(): the device executor measures in this process, without a
    // deadline, and a crash there ends the process.
    return MeasureOnDevice(folded);
  }
  // The reference executor measures in a child of its own, killed past the deadline; what the
  // child computes beyond the figure (its memory) is discarded.
  ++isolated_measurements_;
  const InjectedFault::Kind fault = reference_fault_.Due(isolated_measurements_)
                                        ? reference_fault_.kind
                                        : InjectedFault::Kind::kNone;
  return RunIsolated([&] { return MeasureOnDevice(folded); }, options_.timeout_s, fault);
}

StatusOr<double> E2eCostModel::MeasureOnDevice(const Graph& folded) {
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
