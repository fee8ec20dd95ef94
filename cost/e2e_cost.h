#pragma once
// The end-to-end cost models (`--cost e2e:ort|e2e:reference|e2e:cuda`): a graph costs its
// measured end-to-end time, run as the file rewire would write: weight-only subgraphs folded,
// then exported as standard ONNX and run in ONNX Runtime (e2e:ort), run on rewire's reference
// executor (e2e:reference) or on the GPU's device executor (e2e:cuda). They are whole-graph
// models (not additive): a search's cost tables measure each candidate graph whole, and the
// searches that cost operators (eqsat's extraction) refuse them.
//
// Each graph is measured once: the least (or median) of `timing.repeats` runs after
// `timing.warmups` (docs/measured.md has the noise floor of each on this machine), keyed
// by the folded graph's structural hash, memoised in the process and kept in the persistent cost
// cache under "e2e:<runtime>[:<version>]:threads=<n>", so that a graph measured by one process
// (another env actor, an earlier run) is not measured again. Every real measurement is counted
// with its seconds (measurements()), and past `measure_budget` measurements costing a new graph
// is ResourceExhausted: the searches stop there (StopReason::kMeasureBudget).
//
// A measurement that crashes or hangs does not take the process down: ONNX Runtime runs in a
// child process (killed past `timeout_s`, restarted for the next graph), and the reference
// executor measures in a fork()ed child (cost/isolated.h) killed past `timeout_s`. Such a graph
// is unmeasurable (IsUnmeasurable, cost/cost_model.h: Unavailable, "unmeasurable: <why>"): it is
// counted (MeasurementCounts::unmeasurable), listed (unmeasurable()), and refused at once from
// then on, while other graphs measure as before. The CUDA executor measures in this process
// (CUDA does not survive fork()): a crash there still ends the process, and it has no deadline.

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cost/isolated.h"
#include "cost/measured_cost.h"
#include "runtimes/ort_runner.h"

namespace rewire {

struct E2eCostOptions {
  /// "ort", "reference", "cuda" or "cuda:N".
  std::string runtime = "ort";
  /// Intra-op threads of the runtime (0: its default).
  int num_threads = 0;
  /// Per graph: untimed runs, then timed runs (min_sample_ms and max_calls_per_sample do not
  /// apply: each timed run is one run of the graph).
  TimingOptions timing{5, 25, 0, 1};
  /// The figure of the timed runs that is the cost: "min" (what a run takes when nothing else
  /// interferes: other processes on the cores only ever add time) or "median".
  std::string statistic = "min";
  /// Graphs it may measure at most (-1: no budget).
  int64_t measure_budget = -1;
  /// Seed of the random inputs the graphs run on.
  uint64_t seed = 1;
  /// Seconds one graph's measurement may take (> 0): past it the measurement is killed and the
  /// graph is unmeasurable. ort and reference only (cuda has no deadline).
  double timeout_s = 600;
};

class E2eCostModel : public CostModel {
 public:
  /// Starts the runtime (ONNX Runtime's runner for ort). Errors: an unknown runtime, invalid
  /// timing options, ONNX Runtime not installed (NotFound), no usable GPU for cuda.
  static StatusOr<std::unique_ptr<E2eCostModel>> Create(const E2eCostOptions& options,
                                                        std::shared_ptr<CostCache> cache = nullptr);
  ~E2eCostModel() override;

  /// E.g. "e2e:ort(1.30.0, 2 threads)".
  std::string Name() const override;
  bool additive() const override { return false; }
  /// Errors besides the measurement's own: an unmeasurable graph (IsUnmeasurable), found so now
  /// or earlier in this process.
  StatusOr<double> GraphCostMs(const Graph& graph) override;
  MeasurementCounts measurements() const override;
  /// The graphs found unmeasurable, in the order found.
  const std::vector<UnmeasurableGraph>& unmeasurable() const { return unmeasurable_; }
  /// The ONNX Runtime runner (ort only; null otherwise), e.g. for its restarts().
  const OrtRunner* ort_runner() const { return ort_.get(); }

  /// Measures `graph` afresh, past the memo, the cache and the budget, and counts nothing: what
  /// `rewire bench e2e` repeats to measure the runtime's noise floor.
  StatusOr<double> Remeasure(const Graph& graph);

 private:
  E2eCostModel(const E2eCostOptions& options, std::unique_ptr<OrtRunner> ort, std::string key,
               std::shared_ptr<CostCache> cache);
  /// The median end-to-end time of `folded` in the runtime.
  StatusOr<double> Measure(const Graph& folded);
  StatusOr<double> MeasureInOrt(const Graph& folded);

  StatusOr<double> MeasureOnDevice(const Graph& folded);

  E2eCostOptions options_;
  std::unique_ptr<OrtRunner> ort_;
  MeasurementMemo memo_;
  int files_ = 0;
  InjectedFault reference_fault_;      // $REWIRE_REFERENCE_FAULT (tests, chaos runs)
  int64_t isolated_measurements_ = 0;  // reference measurements started, counted for it
  std::unordered_map<uint64_t, std::string> unmeasurable_reasons_;  // folded hash -> why
  std::vector<UnmeasurableGraph> unmeasurable_;
};

}  // namespace rewire
