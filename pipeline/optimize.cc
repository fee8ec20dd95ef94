#include "pipeline/optimize.h"

#include <algorithm>

#include "graph/clock.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/device_executor.h"

namespace rewire {

namespace {

void Log(const OptimizeRequest& request, const std::string& line) {
  if (request.log) request.log(line);
}

/// The runtime judge's verdict on the result and the graphs along the search's path; fills the
/// report's verdict and the bytes to write.
Status Judge(const Graph& input, const std::vector<rules::Rule>& rules, CostModel& cost,
             const OptimizeRequest& request, OrtRunner* ort, OptimizeReport& report) {
  const SearchResult& r = report.search_result;
  REWIRE_ASSIGN_OR_RETURN(const std::string input_bytes,
                          ExportOnnxBytes(input, request.finish.onnx));
  REWIRE_ASSIGN_OR_RETURN(auto path, PathCandidates(input, rules, r, cost, request.finish,
                                                    request.runtime_candidates, request.log));
  const std::string total = std::to_string(r.steps.size());
  std::vector<RuntimeCandidate> candidates;
  candidates.push_back({"final, " + total + " rewrites", &report.result.graph, report.written});
  for (const auto& [k, g] : path) {
    candidates.push_back(
        {"after " + std::to_string(k) + " of " + total + " rewrites", &g.graph, g.onnx});
  }
  Log(request,
      "judging " + std::to_string(candidates.size()) + " graph(s) in " + request.judge.runtime);
  REWIRE_ASSIGN_OR_RETURN(report.verdict,
                          JudgeInRuntime(input, input_bytes, candidates, ort, request.judge));
  if (report.verdict.decision == "input") {
    report.written = input_bytes;
    report.written_rewrites = 0;
    report.written_graph = input;
  } else if (report.verdict.chosen > 0) {
    const auto& [k, g] = path[report.verdict.chosen - 1];
    report.written = g.onnx;
    report.written_rewrites = k;
    report.written_graph = g.graph;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Search>> CheckRequest(const OptimizeRequest& request,
                                               const SearchRegistry& searches) {
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Search> search,
                          searches.Make(request.search, request.search_options));
  REWIRE_RETURN_IF_ERROR(search->Check(request.limits).WithContext("search " + request.search));
  if (request.judge.runtime == "ort" && request.finish.onnx.custom_ops) {
    return InvalidArgument(
        "files with rewire's custom ops (--onnx-custom-ops) do not load in ONNX Runtime: judge "
        "them in the reference runtime or write standard ONNX");
  }
  if (request.runtime_candidates < 1) {
    return InvalidArgument("the runtime judge needs at least 1 candidate, got " +
                           std::to_string(request.runtime_candidates));
  }
  return search;
}

OptimizePipeline::OptimizePipeline(OptimizeRequest request, std::unique_ptr<Search> search,
                                   std::unique_ptr<OrtRunner> ort)
    : request_(std::move(request)), search_(std::move(search)), ort_(std::move(ort)) {}
OptimizePipeline::OptimizePipeline(OptimizePipeline&&) noexcept = default;
OptimizePipeline& OptimizePipeline::operator=(OptimizePipeline&&) noexcept = default;
OptimizePipeline::~OptimizePipeline() = default;

StatusOr<OptimizePipeline> OptimizePipeline::Prepare(OptimizeRequest request,
                                                     const SearchRegistry& searches) {
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Search> search, CheckRequest(request, searches));
  std::unique_ptr<OrtRunner> ort;
  if (!request.judge.runtime.empty()) {
    REWIRE_ASSIGN_OR_RETURN(ort, StartRuntime(request.judge));
  }
  if (request.latency.repeats > 0) {
    REWIRE_ASSIGN_OR_RETURN(const ExecDevice device, ParseExecDevice(request.latency.device));
    REWIRE_RETURN_IF_ERROR(CheckExecDevice(device));
  }
  return OptimizePipeline(std::move(request), std::move(search), std::move(ort));
}

StatusOr<OptimizeReport> OptimizePipeline::Run(const Graph& input,
                                               const std::vector<rules::Rule>& rules,
                                               CostModel& cost) {
  const auto start = Clock::now();
  const OptimizeRequest& q = request_;
  OptimizeReport report;
  report.label = q.label;
  report.search = q.search;
  report.cost_model = cost.Name();
  report.cost_unit = cost.unit();
  report.onnx_custom_ops = q.finish.onnx.custom_ops;
  report.nodes_before = input.num_nodes();
  report.latency.tolerance = q.latency.device_rtol;
  const MeasurementCounts before = cost.measurements();
  REWIRE_ASSIGN_OR_RETURN(report.search_result, search_->Run(input, rules, cost, q.limits));
  FinishOptions finish = q.finish;
  finish.export_onnx = finish.export_onnx || !q.judge.runtime.empty();
  REWIRE_ASSIGN_OR_RETURN(report.result,
                          FinishSearch(input, std::move(report.search_result.best), cost, finish));
  report.nodes_after = report.result.graph.num_nodes();
  report.measurements = cost.measurements();
  report.measurements.measured -= before.measured;
  report.measurements.seconds -= before.seconds;
  report.measurements.cache_hits -= before.cache_hits;
  report.measurements.memo_hits -= before.memo_hits;
  report.written = report.result.onnx;
  report.written_rewrites = report.search_result.steps.size();
  if (report.result.equivalence.verified) report.written_graph = report.result.graph;
  if (report.result.equivalence.verified) {
    if (q.latency.repeats > 0) {
      REWIRE_ASSIGN_OR_RETURN(report.latency,
                              MeasureLatency(input, report.result.graph, q.latency));
    }
    if (!q.judge.runtime.empty()) {
      REWIRE_RETURN_IF_ERROR(Judge(input, rules, cost, q, ort_.get(), report));
    }
  }
  report.seconds = SecondsSince(start);
  return report;
}

StatusOr<std::vector<std::pair<size_t, FinishedGraph>>> PathCandidates(
    const Graph& input, const std::vector<rules::Rule>& rules, const SearchResult& search,
    CostModel& cost, const FinishOptions& finish, int count,
    const std::function<void(const std::string&)>& log) {
  std::vector<std::pair<size_t, FinishedGraph>> out;
  std::vector<size_t> prefixes = SpreadPrefixes(search.steps.size(), count);
  if (!prefixes.empty()) prefixes.erase(prefixes.begin());  // the final graph, judged already
  const bool replayable = std::all_of(search.steps.begin(), search.steps.end(),
                                      [](const SearchStep& s) { return s.match.rule >= 0; });
  if (prefixes.empty() || !replayable) return out;
  FinishOptions fo = finish;
  fo.also_cost.clear();
  fo.onnx_path.clear();
  fo.export_onnx = true;
  REWIRE_ASSIGN_OR_RETURN(std::vector<Graph> graphs,
                          ReplaySteps(input, rules, search.steps, prefixes));
  for (size_t i = 0; i < graphs.size(); ++i) {
    REWIRE_ASSIGN_OR_RETURN(FinishedGraph done,
                            FinishSearch(input, std::move(graphs[i]), cost, fo));
    if (!done.equivalence.verified) {
      // Not offered: every graph the judge may choose is verified first.
      if (log) {
        log("the graph after " + std::to_string(prefixes[i]) + " rewrites does not verify (" +
            done.equivalence.message + "): not judged");
      }
      continue;
    }
    out.emplace_back(prefixes[i], std::move(done));
  }
  return out;
}

StatusOr<LatencyReport> MeasureLatency(const Graph& input, const Graph& result,
                                       const LatencyOptions& o) {
  LatencyReport r;
  r.tolerance = o.device_rtol;
  TimingOptions timing;
  timing.warmups = 2;
  timing.repeats = o.repeats;
  DeviceRunOptions run;
  run.device = o.device;
  run.num_threads = o.num_threads;
  REWIRE_ASSIGN_OR_RETURN(const DeviceLatency before, MeasureGraphLatencyOn(input, timing, run));
  REWIRE_ASSIGN_OR_RETURN(const DeviceLatency after, MeasureGraphLatencyOn(result, timing, run));
  r.device = before.device;
  r.before_ms = before.stats.median_ms;
  r.after_ms = after.stats.median_ms;
  REWIRE_ASSIGN_OR_RETURN(const ExecDevice device, ParseExecDevice(o.device));
  if (!device.cuda) return r;
  if (o.cuda_graph) {
    run.cuda_graph = true;
    REWIRE_ASSIGN_OR_RETURN(const DeviceLatency gb, MeasureGraphLatencyOn(input, timing, run));
    REWIRE_ASSIGN_OR_RETURN(const DeviceLatency ga, MeasureGraphLatencyOn(result, timing, run));
    r.graph_used = gb.cuda_graph && ga.cuda_graph;
    r.graph_before_ms = gb.cuda_graph ? gb.stats.median_ms : 0;
    r.graph_after_ms = ga.cuda_graph ? ga.stats.median_ms : 0;
    r.graph_note = !gb.note.empty()   ? "input: " + gb.note
                   : !ga.note.empty() ? "result: " + ga.note
                                      : "";
    run.cuda_graph = false;
  }
  REWIRE_ASSIGN_OR_RETURN(const Equivalence a,
                          CompareDeviceWithReference(input, run, o.device_rtol));
  REWIRE_ASSIGN_OR_RETURN(const Equivalence b,
                          CompareDeviceWithReference(result, run, o.device_rtol));
  r.checked = true;
  r.check_ok = a.verified && b.verified;
  r.check_rel_before = a.max_rel;
  r.check_rel_after = b.max_rel;
  r.check_message = !a.verified ? "input: " + a.message : !b.verified ? "result: " + b.message : "";
  return r;
}

}  // namespace rewire
