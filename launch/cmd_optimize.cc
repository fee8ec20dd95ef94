// `rewire optimize`: search for a faster equivalent graph, fold weights, verify, write.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "env/search.h"
#include "graph/files.h"
#include "graph/json.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/cost_backends.h"
#include "kernels/cpu_cost.h"
#include "kernels/device_executor.h"
#include "kernels/executor.h"
#include "kernels/rule_verify.h"
#include "launch/commands.h"
#include "launch/eqsat_options.h"
#include "launch/runtime_judge.h"
#include "learner/agent.h"
#include "learner/optimize.h"

namespace rewire::cli {

namespace {

struct OptimizeOptions {
  ModelOptions model;
  SearchOptions search;
  CostModelOptions cost;
  std::string rules;
  std::string out;
  std::string report;
  double rtol = 1e-3;
  std::string policy;
  AgentSearchOptions agent;
  GuidedSearchOptions guided;
  bool quiet = false;
  bool no_greedy_seed = false;  // guided: beam from the policy's rollout only
  int latency_repeats = 0;
  std::string latency_device = "cpu";
  bool cuda_graph = false;
  double device_rtol = 1e-3;
  std::vector<std::string> also_cost;  // KIND or KIND:PROFILE
  bool onnx_custom_ops = false;        // write ai.rewire ops instead of standard ONNX
  std::string runtime;                 // "", "ort" or "reference": the judge of the result
  RuntimeJudgeOptions judge;
  int runtime_candidates = 3;  // graphs along the search's path judged, the final one included
};

/// The graphs the runtime judges: the search's final graph, then up to `count` - 1 graphs along
/// its path (after fewer of its rewrites), each folded, verified and exported like the final
/// one. Searches that record no matches (the agent's) offer their final graph only.
std::vector<std::pair<size_t, FinishedGraph>> PathCandidates(const Graph& original,
                                                             const std::vector<rules::Rule>& rules,
                                                             const SearchResult& r, CostModel& cost,
                                                             const FinishOptions& finish, int count,
                                                             bool quiet) {
  std::vector<std::pair<size_t, FinishedGraph>> out;
  std::vector<size_t> prefixes = SpreadPrefixes(r.steps.size(), count);
  if (!prefixes.empty()) prefixes.erase(prefixes.begin());  // the final graph, judged already
  const bool replayable = std::all_of(r.steps.begin(), r.steps.end(),
                                      [](const SearchStep& s) { return s.match.rule >= 0; });
  if (prefixes.empty() || !replayable) return out;
  FinishOptions fo = finish;
  fo.also_cost.clear();
  fo.onnx_path.clear();
  fo.export_onnx = true;
  std::vector<Graph> graphs = Take(ReplaySteps(original, rules, r.steps, prefixes));
  for (size_t i = 0; i < graphs.size(); ++i) {
    FinishedGraph done = Take(FinishSearch(original, std::move(graphs[i]), cost, fo));
    if (!done.equivalence.verified) {
      // Not offered: every graph the judge may choose is verified first.
      if (!quiet) {
        std::fprintf(stderr, "the graph after %zu rewrites does not verify (%s): not judged\n",
                     prefixes[i], done.equivalence.message.c_str());
      }
      continue;
    }
    out.emplace_back(prefixes[i], std::move(done));
  }
  return out;
}

/// End-to-end figures of the input and the result on one device (--latency).
struct LatencyReport {
  std::string device;
  double before_ms = 0, after_ms = 0;              // eager runs
  bool graph_used = false;                         // CUDA Graph replays timed too
  double graph_before_ms = 0, graph_after_ms = 0;  // with --cuda-graph
  std::string graph_note;
  bool checked = false;  // device outputs compared with the CPU reference (a GPU device)
  bool check_ok = false;
  double check_rel_before = 0, check_rel_after = 0;
  std::string check_message;
};

LatencyReport MeasureLatency(const OptimizeOptions& o, const Graph& original, const Graph& best) {
  LatencyReport r;
  TimingOptions timing;
  timing.warmups = 2;
  timing.repeats = o.latency_repeats;
  DeviceRunOptions run;
  run.device = o.latency_device;
  run.num_threads = o.cost.num_threads;
  const DeviceLatency before = Take(MeasureGraphLatencyOn(original, timing, run));
  const DeviceLatency after = Take(MeasureGraphLatencyOn(best, timing, run));
  r.device = before.device;
  r.before_ms = before.stats.median_ms;
  r.after_ms = after.stats.median_ms;
  const bool gpu = Take(ParseExecDevice(o.latency_device)).cuda;
  if (gpu && o.cuda_graph) {
    run.cuda_graph = true;
    const DeviceLatency gb = Take(MeasureGraphLatencyOn(original, timing, run));
    const DeviceLatency ga = Take(MeasureGraphLatencyOn(best, timing, run));
    r.graph_used = gb.cuda_graph && ga.cuda_graph;
    r.graph_before_ms = gb.cuda_graph ? gb.stats.median_ms : 0;
    r.graph_after_ms = ga.cuda_graph ? ga.stats.median_ms : 0;
    r.graph_note = !gb.note.empty()   ? "input: " + gb.note
                   : !ga.note.empty() ? "result: " + ga.note
                                      : "";
    run.cuda_graph = false;
  }
  if (gpu) {
    const Equivalence a = Take(CompareDeviceWithReference(original, run, o.device_rtol));
    const Equivalence b = Take(CompareDeviceWithReference(best, run, o.device_rtol));
    r.checked = true;
    r.check_ok = a.verified && b.verified;
    r.check_rel_before = a.max_rel;
    r.check_rel_after = b.max_rel;
    r.check_message = !a.verified   ? "input: " + a.message
                      : !b.verified ? "result: " + b.message
                                    : "";
  }
  return r;
}

}  // namespace

void RegisterOptimize(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "optimize", "Rewrite a model into a faster equivalent graph, verify it and write it as ONNX");
  auto o = std::make_shared<OptimizeOptions>();
  AddModelOptions(*cmd, o->model);
  std::vector<std::string> searches = SearchAlgorithms();
  for (const std::string& name : AgentSearchAlgorithms()) searches.push_back(name);
  cmd->add_option(
         "--search", o->search.algorithm,
         "greedy | backtrack | random | eqsat (equality saturation, then extraction) | "
         "mcts-eqsat (the e-graph built by tree search) | rl (policy rollouts) | guided (beam "
         "search guided by the policy and its value); rl and guided need --policy")
      ->check(CLI::IsMember(searches))
      ->capture_default_str();
  cmd->add_option("--cost", o->cost.kind,
                  "analytic | cpu | cuda | ort (each op timed in ONNX Runtime)")
      ->capture_default_str();
  cmd->add_option("--device", o->cost.device, "Device profile name (configs/devices) or path");
  cmd->add_option("--cost-cache", o->cost.cache_path, "SQLite cache of measured op costs");
  cmd->add_option("--budget", o->search.budget, "Graphs explored at most")->capture_default_str();
  cmd->add_option("--alpha", o->search.alpha,
                  "backtrack: explore candidates up to alpha x best cost")
      ->capture_default_str();
  cmd->add_option("--max-growth", o->search.max_growth,
                  "backtrack: cap on running operators relative to the input")
      ->capture_default_str();
  cmd->add_option("--max-queue", o->search.max_queue, "backtrack: graphs kept in the queue at most")
      ->capture_default_str();
  cmd->add_option("--time-limit", o->search.time_limit_s, "Seconds (0: none)");
  cmd->add_option("--search-seed", o->search.seed, "Seed of the random search");
  AddEqsatOptions(*cmd, o->search.eqsat);
  cmd->add_option("--policy", o->policy, "rl: policy checkpoint (from `rewire train`)");
  cmd->add_option("--samples", o->agent.samples,
                  "rl: sampled rollouts besides the greedy-policy one")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--horizon", o->agent.horizon,
                  "rl, guided: steps per rollout / depth of the search at most")
      ->capture_default_str();
  cmd->add_option("--beam-width", o->guided.beam_width, "guided: graphs kept at each depth")
      ->capture_default_str();
  cmd->add_option(
         "--expand", o->guided.expand,
         "guided: the policy's most likely rewrites tried from each beam graph (and --cheapest)")
      ->capture_default_str();
  cmd->add_option("--cheapest", o->guided.cheapest,
                  "guided: the cost model's cheapest rewrites also tried from each beam graph")
      ->capture_default_str();
  cmd->add_option(
         "--value-weight", o->guided.value_weight,
         "guided: weight of the value's predicted return-to-go in a graph's score (0: cost alone)")
      ->capture_default_str();
  cmd->add_flag("--no-greedy-seed", o->no_greedy_seed,
                "guided: start the beam from the policy's rollout only, not also from greedy "
                "search's result");
  cmd->add_option("--patience", o->guided.patience,
                  "guided: depths without a cheaper graph before stopping")
      ->capture_default_str();
  cmd->add_option("--rules", o->rules, "Rules file or directory (default: configs/rules)");
  cmd->add_option("--out", o->out, "Write the optimised graph as ONNX");
  cmd->add_option("--report", o->report, "Write a JSON report");
  cmd->add_option("--rtol", o->rtol, "Verification tolerance: max |a-b| / max |b|")
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", o->quiet, "No progress on stderr");
  cmd->add_option("--latency", o->latency_repeats,
                  "Also time both graphs end to end on the reference executor: median of N runs")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--latency-device", o->latency_device,
                  "Where --latency runs: cpu, cuda or cuda:N (a GPU needs a CUDA LibTorch; its "
                  "outputs are also checked against the CPU reference)")
      ->capture_default_str();
  cmd->add_flag("--cuda-graph", o->cuda_graph,
                "With a GPU --latency-device: also time the graphs as CUDA Graph replays");
  cmd->add_option("--device-rtol", o->device_rtol,
                  "Tolerance of the GPU-versus-CPU check: max |a-b| / max |b|")
      ->capture_default_str();
  cmd->add_option("--also-cost", o->also_cost,
                  "Also report what another cost model predicts: KIND or KIND:PROFILE, e.g. "
                  "analytic:h100 or cuda (repeatable)");
  cmd->add_flag("--onnx-custom-ops", o->onnx_custom_ops,
                "Write rewire's fused ops (ai.rewire domain) instead of standard ONNX; such a file "
                "loads in rewire only");
  cmd->add_option("--runtime", o->runtime,
                  "Judge the result in this runtime: ort (ONNX Runtime, tools/ort) or reference; "
                  "both graphs are checked and timed there, and the result is written only if it "
                  "measures faster (else the input is written unchanged)")
      ->check(CLI::IsMember({"ort", "reference"}));
  cmd->add_option("--runtime-candidates", o->runtime_candidates,
                  "Graphs along the search's path that --runtime judges, the final one included "
                  "(greedy, backtrack, random; the rl and guided searches offer their final graph "
                  "only): the fastest is confirmed against the input and written if faster")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--runtime-rounds", o->judge.rounds, "Alternating timing rounds of --runtime")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--runtime-repeats", o->judge.repeats,
                  "Timed runs of each graph per round, at least (see --runtime-min-round-ms)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--runtime-min-round-ms", o->judge.min_round_ms,
                  "A graph faster than this / --runtime-repeats gets more runs per round, so "
                  "that each round of each graph lasts about this long (0: exactly the repeats)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--runtime-threads", o->judge.threads,
                  "Intra-op threads of --runtime (0: its default)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--runtime-min-gain", o->judge.min_gain,
                  "Fraction by which the result must measure faster overall to be written (it must "
                  "also measure faster in every round)")
      ->capture_default_str();
  cmd->add_option("--runtime-rtol", o->judge.rtol,
                  "Tolerance of the runtime's outputs against the reference executor")
      ->capture_default_str();
  cmd->callback([o]() {
    const auto wall = std::chrono::steady_clock::now();
    if (!o->runtime.empty() && o->onnx_custom_ops && o->runtime == "ort") {
      throw CommandError(
          "--onnx-custom-ops files do not load in ONNX Runtime; drop one of --onnx-custom-ops, "
          "--runtime ort");
    }
    // The runtime must be usable before the search starts, not after it.
    o->judge.runtime = o->runtime;
    std::unique_ptr<OrtRunner> ort;
    const std::vector<std::string>& agent_searches = AgentSearchAlgorithms();
    const bool agent_search = std::find(agent_searches.begin(), agent_searches.end(),
                                        o->search.algorithm) != agent_searches.end();
    if (agent_search && o->policy.empty()) {
      throw CommandError("--search " + o->search.algorithm +
                         " needs --policy CHECKPOINT (from `rewire train`)");
    }
    if (!agent_search && !o->policy.empty())
      throw CommandError("--policy applies to --search rl and guided only");
    if (o->search.algorithm == "guided" && o->search.budget < 1) {
      throw CommandError("--budget must be at least 1 graph for the guided search (got " +
                         std::to_string(o->search.budget) + ")");
    }
    if (!o->runtime.empty()) ort = Take(StartRuntime(o->judge));
    // A latency device that cannot be used is an error before the search, not after it.
    if (o->latency_repeats > 0) Check(CheckExecDevice(Take(ParseExecDevice(o->latency_device))));
    const Graph original = LoadModel(o->model);
    const auto rules = Take(LoadVerifiedRules(o->rules.empty() ? DefaultRulesPath() : o->rules));
    if (o->cost.devices_dir.empty()) o->cost.devices_dir = DefaultDevicesDir();
    // The ort cost model times ops with the threads the ort judge uses.
    if (o->cost.kind == "ort" && o->cost.num_threads == 0) o->cost.num_threads = o->judge.threads;
    auto cost = Take(MakeCostModel(o->cost));

    OptimizeRequest request;
    request.search = o->search;
    request.policy = o->policy;
    request.agent = o->agent;
    request.guided = o->guided;
    request.guided.greedy_seed = !o->no_greedy_seed;
    request.finish.rtol = o->rtol;
    request.finish.export_onnx = !o->out.empty() || !o->runtime.empty();
    request.finish.onnx.custom_ops = o->onnx_custom_ops;
    for (const std::string& spec : o->also_cost) {
      CostModelOptions other;
      const size_t colon = spec.find(':');
      other.kind = spec.substr(0, colon);
      if (colon != std::string::npos) other.device = spec.substr(colon + 1);
      other.devices_dir = o->cost.devices_dir;
      other.cache_path = o->cost.cache_path;
      request.finish.also_cost.push_back(other);
    }
    if (!o->quiet) {
      request.search.progress = [](const SearchProgress& p) {
        std::fprintf(stderr, "\r  %s %d/%d  best %.4f ms (%.3fx)  queue %zu   ", "search",
                     p.iteration, p.budget, p.best_cost_ms,
                     p.best_cost_ms > 0 ? p.initial_cost_ms / p.best_cost_ms : 0.0, p.queue_size);
      };
      std::fprintf(stderr, "%s: %d operators, %zu verified rules, %s search, cost %s\n",
                   o->model.model.c_str(), original.NumOperators(), rules.size(),
                   request.search.algorithm.c_str(), cost->Name().c_str());
    }
    OptimizeOutcome outcome = Take(OptimizeGraph(original, rules, *cost, request));
    if (!o->quiet) std::fprintf(stderr, "\n");
    const SearchResult& r = outcome.search;
    const FinishedGraph& done = outcome.result;
    const Graph& best = done.graph;
    const double final_cost = done.final_cost_ms;
    const Equivalence& v = done.equivalence;
    LatencyReport latency;
    if (o->latency_repeats > 0 && v.verified) latency = MeasureLatency(*o, original, best);
    const double latency_before = latency.before_ms, latency_after = latency.after_ms;
    std::string written = done.onnx;  // the bytes --out gets
    RuntimeVerdict verdict;
    size_t chosen_rewrites = r.steps.size();  // rewrites of the graph written
    if (v.verified && !o->runtime.empty()) {
      const std::string input_bytes = Take(ExportOnnxBytes(original, request.finish.onnx));
      const auto path = PathCandidates(original, rules, r, *cost, request.finish,
                                       o->runtime_candidates, o->quiet);
      std::vector<RuntimeCandidate> candidates;
      candidates.push_back(
          {"final, " + std::to_string(r.steps.size()) + " rewrites", &best, written});
      for (const auto& [k, g] : path) {
        candidates.push_back(
            {"after " + std::to_string(k) + " of " + std::to_string(r.steps.size()) + " rewrites",
             &g.graph, g.onnx});
      }
      if (!o->quiet) {
        std::fprintf(stderr, "judging %zu graph(s) in %s\n", candidates.size(), o->runtime.c_str());
      }
      verdict = Take(JudgeInRuntime(original, input_bytes, candidates, ort.get(), o->judge));
      if (verdict.decision == "input") {
        written = input_bytes;
        chosen_rewrites = 0;
      } else if (verdict.chosen > 0) {
        written = path[verdict.chosen - 1].second.onnx;
        chosen_rewrites = path[verdict.chosen - 1].first;
      }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();

    std::printf("model            %s\n", o->model.model.c_str());
    std::printf("search           %s (stopped: %s after %d iterations, %lld candidates costed)\n",
                request.search.algorithm.c_str(), StopReasonName(r.reason), r.iterations,
                static_cast<long long>(r.candidates_evaluated));
    std::printf("cost model       %s\n", cost->Name().c_str());
    std::printf("initial cost     %.4f ms\n", r.initial_cost_ms);
    std::printf("final cost       %.4f ms\n", final_cost);
    std::printf("speedup          %.3fx\n", final_cost > 0 ? r.initial_cost_ms / final_cost : 0.0);
    std::printf("operators        %d -> %d\n", original.NumOperators(), best.NumOperators());
    std::printf("rewrites         %zu\n", r.steps.size());
    if (!r.eqsat.extraction.empty()) std::printf("e-graph          %s\n", EqsatSummary(r).c_str());
    for (const SearchStep& s : r.steps) std::printf("  %-44s %.4f ms\n", s.rule.c_str(), s.cost_ms);
    std::printf("verified         %s (max abs error %.3g, max rel error %.3g, tolerance %.0e)\n",
                v.verified ? "yes" : "NO", v.max_abs, v.max_rel, o->rtol);
    for (const CostPrediction& p : done.predictions) {
      std::printf("predicted        %.4f ms -> %.4f ms (%.3fx) by %s\n", p.initial_ms, p.final_ms,
                  p.final_ms > 0 ? p.initial_ms / p.final_ms : 0.0, p.cost_model.c_str());
    }
    if (latency_before > 0) {
      std::printf(
          "latency (%s)  %.3f ms -> %.3f ms measured (%.3fx; the cost model predicted %.3fx)\n",
          latency.device.c_str(), latency_before, latency_after, latency_before / latency_after,
          final_cost > 0 ? r.initial_cost_ms / final_cost : 0.0);
      if (latency.graph_used) {
        std::printf("latency (%s, CUDA Graph)  %.3f ms -> %.3f ms (%.3fx)\n",
                    latency.device.c_str(), latency.graph_before_ms, latency.graph_after_ms,
                    latency.graph_before_ms / latency.graph_after_ms);
      } else if (!latency.graph_note.empty()) {
        std::printf("CUDA Graph       %s\n", latency.graph_note.c_str());
      }
      if (latency.checked) {
        std::printf(
            "%s vs CPU      %s (max rel error %.3g input, %.3g result; tolerance %.0e)%s%s\n",
            latency.device.c_str(), latency.check_ok ? "equal" : "DIFFERENT",
            latency.check_rel_before, latency.check_rel_after, o->device_rtol,
            latency.check_message.empty() ? "" : ": ", latency.check_message.c_str());
      }
    }
    for (const CandidateTiming& c : verdict.candidates) {
      std::printf("candidate        %-28s %.3f ms (%.3fx), max rel error %.3g\n", c.label.c_str(),
                  c.ms, c.speedup, c.max_rel);
    }
    if (!verdict.decision.empty()) {
      std::printf(
          "runtime          %s: %.3f ms -> %.3f ms measured (%.3fx); outputs match the "
          "reference (max rel error %.3g input, %.3g result)\n",
          verdict.runtime.c_str(), verdict.before_ms, verdict.after_ms, verdict.speedup,
          verdict.max_rel_before, verdict.max_rel_after);
      std::printf("decision         %s: %s\n", verdict.decision.c_str(), verdict.reason.c_str());
    }
    std::printf("time             %.2f s\n", seconds);

    if (!o->report.empty()) {
      Json steps = Json::array();
      for (const SearchStep& s : r.steps)
        steps.push_back(Json{{"rule", s.rule}, {"cost_ms", JsonDecimal(s.cost_ms)}});
      Json predicted = Json::array();
      for (const CostPrediction& p : done.predictions) {
        predicted.push_back(
            Json{{"cost_model", p.cost_model},
                 {"initial_ms", JsonDecimal(p.initial_ms)},
                 {"final_ms", JsonDecimal(p.final_ms)},
                 {"speedup", JsonDecimal(p.final_ms > 0 ? p.initial_ms / p.final_ms : 0)}});
      }
      Json js;
      js["model"] = o->model.model;
      js["search"] = request.search.algorithm;
      js["cost_model"] = cost->Name();
      js["initial_cost_ms"] = JsonDecimal(r.initial_cost_ms);
      js["final_cost_ms"] = JsonDecimal(final_cost);
      js["speedup"] = JsonDecimal(final_cost > 0 ? r.initial_cost_ms / final_cost : 0);
      js["stop_reason"] = StopReasonName(r.reason);
      js["steps"] = std::move(steps);
      js["verified"] = v.verified;
      js["max_abs_error"] = JsonDecimal(v.max_abs);
      js["max_rel_error"] = JsonDecimal(v.max_rel);
      js["seconds"] = JsonDecimal(seconds);
      js["search_seconds"] = JsonDecimal(r.seconds);
      js["latency_before_ms"] = JsonDecimal(latency_before);
      js["latency_after_ms"] = JsonDecimal(latency_after);
      js["latency_device"] = latency.device;
      js["measured_speedup"] = JsonDecimal(latency_after > 0 ? latency_before / latency_after : 0);
      js["cuda_graph"] = {{"used", latency.graph_used},
                          {"before_ms", JsonDecimal(latency.graph_before_ms)},
                          {"after_ms", JsonDecimal(latency.graph_after_ms)},
                          {"note", latency.graph_note}};
      js["device_check"] = {{"checked", latency.checked},
                            {"equal", latency.check_ok},
                            {"max_rel_error_input", JsonDecimal(latency.check_rel_before)},
                            {"max_rel_error_result", JsonDecimal(latency.check_rel_after)},
                            {"tolerance", JsonDecimal(o->device_rtol)},
                            {"message", latency.check_message}};
      js["predicted"] = std::move(predicted);
      js["nodes_before"] = original.num_nodes();
      js["nodes_after"] = best.num_nodes();
      if (!verdict.decision.empty()) {
        js["runtime"] = verdict.runtime;
        js["runtime_before_ms"] = JsonDecimal(verdict.before_ms);
        js["runtime_after_ms"] = JsonDecimal(verdict.after_ms);
        js["runtime_speedup"] = JsonDecimal(verdict.speedup);
        js["runtime_max_rel_error_input"] = JsonDecimal(verdict.max_rel_before);
        js["runtime_max_rel_error_result"] = JsonDecimal(verdict.max_rel_after);
        js["runtime_test_slowdown"] = JsonDecimal(verdict.test_slowdown);
        js["decision"] = verdict.decision;
        js["decision_reason"] = verdict.reason;
        js["written_rewrites"] = chosen_rewrites;
        js["runtime_rounds"] = verdict.rounds;
        js["runtime_repeats"] = verdict.repeats;
        js["runtime_rounds_faster"] = verdict.rounds_faster;
        Json judged = Json::array();
        for (const CandidateTiming& c : verdict.candidates) {
          judged.push_back(Json{{"label", c.label},
                                {"ms", JsonDecimal(c.ms)},
                                {"speedup", JsonDecimal(c.speedup)},
                                {"max_rel_error", JsonDecimal(c.max_rel)}});
        }
        js["runtime_candidates"] = std::move(judged);
        js["runtime_chosen"] = verdict.chosen;
      }
      js["onnx_custom_ops"] = o->onnx_custom_ops;
      AddEqsatReport(r, &js);
      Check(WriteFileAtomic(o->report, JsonText(js, 2) + "\n"));
    }
    if (!v.verified) {
      throw CommandError("the optimised graph does not match the input (" + v.message +
                         "); nothing written");
    }
    if (latency.checked && !latency.check_ok) {
      throw CommandError("the executor's " + latency.device +
                         " outputs differ from the CPU reference (" + latency.check_message + ")");
    }
    if (!o->out.empty()) {
      Check(WriteFileAtomic(o->out, written));
      std::string what;
      if (verdict.decision == "input") {
        what = " (the input, unchanged)";
      } else if (chosen_rewrites != r.steps.size()) {
        what = " (the graph after " + std::to_string(chosen_rewrites) + " of " +
               std::to_string(r.steps.size()) + " rewrites)";
      }
      std::printf("wrote            %s%s\n", o->out.c_str(), what.c_str());
    }
  });
}

}  // namespace rewire::cli
