#pragma once
// `rewire optimize` as library code: the whole optimise pipeline below the CLI, so that the CLI,
// `rewire eval`, scripts and tests run the same steps:
//
//   Prepare  check the request (an error here costs nothing: no search has run): the search by
//            name from a SearchRegistry with its options set and checked; start the runtime that
//            will judge the result, check the latency device
//   Run      the search, FinishSearch (fold, cost, verify,
//            other cost models' predictions, ONNX), end-to-end latency, and with a runtime
//            judge the graphs along the search's path and the judge's choice of the bytes to
//            write
//
// The result is an OptimizeReport: data for the caller to print, serialise (ReportJson in
// pipeline/report.h) and write. The pipeline knows no search by name; no LibTorch and no policy
// code here: the searches that run a trained agent come from learner/agent_searches.h through the
// registry.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "env/finish.h"
#include "env/search.h"
#include "env/search_registry.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "pipeline/runtime_judge.h"
#include "runtimes/ort_runner.h"

namespace rewire {

/// End-to-end timing of the input and the result on one device (`--latency`).
struct LatencyOptions {
  int repeats = 0;             // median of this many runs; 0: not measured
  std::string device = "cpu";  // cpu, cuda or cuda:N
  bool cuda_graph = false;     // on a GPU: also time CUDA Graph replays
  double device_rtol = 1e-3;   // a GPU's outputs against the CPU reference
  int num_threads = 0;         // CPU threads (0: LibTorch's default)
};

struct OptimizeRequest {
  /// The model's name in reports (a zoo name or a file path).
  std::string label;
  /// The search: a name of the registry, and its own options by name as text (what
  /// `rewire optimize --search NAME --OPTION VALUE` gives; OptionSet::Set reads them).
  std::string search = "backtrack";
  std::vector<std::pair<std::string, std::string>> search_options;
  /// The limits every search shares (budget, time limit, seed, candidate cap) and its progress.
  SearchLimits limits;
  FinishOptions finish;
  LatencyOptions latency;
  /// judge.runtime "ort" or "reference" judges the result in that runtime; empty: no judge.
  RuntimeJudgeOptions judge;
  /// Graphs along the search's path the judge weighs, the final one included (at least 1).
  int runtime_candidates = 3;
  /// Progress lines (may be empty): the graphs judged, a path graph that does not verify.
  std::function<void(const std::string&)> log;
};

/// End-to-end figures of the input and the result on one device.
struct LatencyReport {
  std::string device;
  double before_ms = 0, after_ms = 0;              // eager runs
  bool graph_used = false;                         // CUDA Graph replays timed too
  double graph_before_ms = 0, graph_after_ms = 0;  // with cuda_graph
  std::string graph_note;
  bool checked = false;  // device outputs compared with the CPU reference (a GPU device)
  bool check_ok = false;
  double check_rel_before = 0, check_rel_after = 0;
  std::string check_message;
  double tolerance = 1e-3;  // of the device check: LatencyOptions::device_rtol
};

/// Everything one run of the pipeline found and decided.
struct OptimizeReport {
  std::string label;
  std::string search;            // the search's name
  std::string cost_model;        // CostModel::Name()
  std::string cost_unit = "ms";  // CostModel::unit(): what the costs below count
  /// The search's statistics and rewrites (its graph is moved into `result.graph`).
  SearchResult search_result;
  /// The folded, costed, verified result (result.equivalence says whether it matches).
  FinishedGraph result;
  int nodes_before = 0, nodes_after = 0;
  LatencyReport latency;  // latency.device empty: not measured
  /// The runtime judge's figures and decision; verdict.decision empty: not judged.
  RuntimeVerdict verdict;
  /// The bytes to write as the optimised model: the result's ONNX, a graph along the search's
  /// path, or the input's when the judge found nothing faster. Empty when the result did not
  /// verify, or no export was asked for (finish.export_onnx) and nothing was judged.
  std::string written;
  /// Rewrites of the graph in `written` (of search_result.steps).
  size_t written_rewrites = 0;
  /// The graph `written` holds (the result's, one along the path, or the input), when there is
  /// one: what a file in another form (dynamic axes, pipeline/dynamic_axes.h) is written from.
  Graph written_graph;
  bool onnx_custom_ops = false;
  /// The real measurements the cost model made in this run (search and finish), their seconds
  /// and the costs it answered from its memo or cache; all zero for a model that measures nothing.
  MeasurementCounts measurements;
  double seconds = 0;  // Run, from the search to the judge's decision
};

class OptimizePipeline {
 public:
  /// Makes the request's search from `searches` with its options set, checks it and the rest of
  /// `request`, and starts what must work before a search runs: the judging runtime (ONNX
  /// Runtime's runner) and the latency device. Errors: an unknown search; an option the search
  /// does not take or a value out of its range; what the search's own Check refuses (a missing
  /// policy checkpoint, a budget below 1, ...); custom ops with ONNX Runtime as the judge; fewer
  /// than 1 runtime candidate; a runtime that cannot start; a latency device this build or
  /// machine cannot use.
  static StatusOr<OptimizePipeline> Prepare(OptimizeRequest request,
                                            const SearchRegistry& searches);

  /// Runs the pipeline on `input`. A result that does not match the input is data
  /// (result.equivalence; nothing is judged, nothing is to be written), not an error. Errors:
  /// the search's, folding, costing or exporting failed, the runtime failed or gave outputs
  /// that differ from the reference executor.
  StatusOr<OptimizeReport> Run(const Graph& input, const std::vector<rules::Rule>& rules,
                               CostModel& cost);

  const OptimizeRequest& request() const { return request_; }

  OptimizePipeline(OptimizePipeline&&) noexcept;
  OptimizePipeline& operator=(OptimizePipeline&&) noexcept;
  ~OptimizePipeline();

 private:
  OptimizePipeline(OptimizeRequest request, std::unique_ptr<Search> search,
                   std::unique_ptr<OrtRunner> ort);
  OptimizeRequest request_;
  std::unique_ptr<Search> search_;
  std::unique_ptr<OrtRunner> ort_;
};

/// Checks `request` as Prepare does, without starting anything; returns the search it asks for,
/// its options set.
StatusOr<std::unique_ptr<Search>> CheckRequest(const OptimizeRequest& request,
                                               const SearchRegistry& searches);

/// The graphs the runtime judges besides the search's final one: up to `count` - 1 graphs along
/// its path (after fewer of its rewrites, SpreadPrefixes), rebuilt by ReplaySteps and each
/// folded, verified and exported like the final one; a graph that does not verify is left out
/// (and logged). Empty for searches that record no matches. Pairs of (rewrites, graph).
StatusOr<std::vector<std::pair<size_t, FinishedGraph>>> PathCandidates(
    const Graph& input, const std::vector<rules::Rule>& rules, const SearchResult& search,
    CostModel& cost, const FinishOptions& finish, int count,
    const std::function<void(const std::string&)>& log);

/// Times `input` and `result` end to end on options.device; on a GPU also checks both against
/// the CPU reference. Errors: the device cannot run them.
StatusOr<LatencyReport> MeasureLatency(const Graph& input, const Graph& result,
                                       const LatencyOptions& options);

}  // namespace rewire
