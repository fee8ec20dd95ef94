// `rewire optimize`: search for a faster equivalent graph, fold weights, verify, write.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "env/search.h"
#include "graph/json.h"
#include "graph/onnx/onnx_io.h"
#include "kernels/cost_backends.h"
#include "kernels/cpu_cost.h"
#include "kernels/executor.h"
#include "kernels/fold.h"
#include "kernels/rule_verify.h"
#include "launch/commands.h"
#include "learner/agent.h"

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
  bool quiet = false;
  int latency_repeats = 0;
};

}  // namespace

void RegisterOptimize(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "optimize", "Rewrite a model into a faster equivalent graph, verify it and write it as ONNX");
  auto o = std::make_shared<OptimizeOptions>();
  AddModelOptions(*cmd, o->model);
  std::vector<std::string> searches = SearchAlgorithms();
  searches.push_back("rl");
  cmd->add_option("--search", o->search.algorithm, "greedy | backtrack | random | rl (needs --policy)")
      ->check(CLI::IsMember(searches))
      ->capture_default_str();
  cmd->add_option("--cost", o->cost.kind, "analytic | cpu | cuda")->capture_default_str();
  cmd->add_option("--device", o->cost.device, "Device profile name (configs/devices) or path");
  cmd->add_option("--cost-cache", o->cost.cache_path, "SQLite cache of measured op costs");
  cmd->add_option("--budget", o->search.budget, "Graphs explored at most")->capture_default_str();
  cmd->add_option("--alpha", o->search.alpha, "backtrack: explore candidates up to alpha x best cost")
      ->capture_default_str();
  cmd->add_option("--max-growth", o->search.max_growth,
                  "backtrack: cap on running operators relative to the input")
      ->capture_default_str();
  cmd->add_option("--max-queue", o->search.max_queue, "backtrack: graphs kept in the queue at most")
      ->capture_default_str();
  cmd->add_option("--time-limit", o->search.time_limit_s, "Seconds (0: none)");
  cmd->add_option("--search-seed", o->search.seed, "Seed of the random search");
  cmd->add_option("--policy", o->policy, "rl: policy checkpoint (from `rewire train`)");
  cmd->add_option("--samples", o->agent.samples, "rl: sampled rollouts besides the greedy-policy one")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--horizon", o->agent.horizon, "rl: steps per rollout at most")->capture_default_str();
  cmd->add_option("--rules", o->rules, "Rules file or directory (default: configs/rules)");
  cmd->add_option("--out", o->out, "Write the optimised graph as ONNX");
  cmd->add_option("--report", o->report, "Write a JSON report");
  cmd->add_option("--rtol", o->rtol, "Verification tolerance: max |a-b| / max |b|")->capture_default_str();
  cmd->add_flag("-q,--quiet", o->quiet, "No progress on stderr");
  cmd->add_option("--latency", o->latency_repeats,
                  "Also time both graphs end to end on the reference executor (CPU): median of N runs")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o]() {
    const auto wall = std::chrono::steady_clock::now();
    const Graph original = LoadModel(o->model);
    const auto rules = Take(LoadVerifiedRules(o->rules.empty() ? DefaultRulesPath() : o->rules));
    if (o->cost.devices_dir.empty()) o->cost.devices_dir = DefaultDevicesDir();
    auto cost = Take(MakeCostModel(o->cost));
    SearchOptions search = o->search;
    if (!o->quiet) {
      search.progress = [](const SearchProgress& p) {
        std::fprintf(stderr, "\r  %s %d/%d  best %.4f ms (%.3fx)  queue %zu   ", "search", p.iteration, p.budget,
                     p.best_cost_ms, p.best_cost_ms > 0 ? p.initial_cost_ms / p.best_cost_ms : 0.0, p.queue_size);
      };
      std::fprintf(stderr, "%s: %d operators, %zu verified rules, %s search, cost %s\n", o->model.model.c_str(),
                   original.NumOperators(), rules.size(), search.algorithm.c_str(), cost->Name().c_str());
    }
    SearchResult r;
    if (search.algorithm == "rl") {
      if (o->policy.empty()) throw CommandError("--search rl needs --policy CHECKPOINT (from `rewire train`)");
      auto agent = Take(Agent::Load(o->policy));
      AgentSearchOptions ao = o->agent;
      ao.max_candidates = search.max_candidates;
      ao.seed = search.seed;
      r = Take(agent->Optimize(original, rules, *cost, ao)).best;
    } else {
      if (!o->policy.empty()) throw CommandError("--policy applies to --search rl only");
      r = Take(RunSearch(original, rules, *cost, search));
    }
    if (!o->quiet) std::fprintf(stderr, "\n");
    Graph best = std::move(r.best);
    Take(FoldWeightSubgraphs(best));
    const double final_cost = Take(GraphCostMs(*cost, best));
    const Equivalence v = CheckEquivalent(original, best, o->rtol);
    double latency_before = 0, latency_after = 0;
    if (o->latency_repeats > 0 && v.verified) {
      TimingOptions timing;
      timing.warmups = 1;
      timing.repeats = o->latency_repeats;
      latency_before = Take(MeasureGraphLatency(original, timing, o->cost.num_threads)).median_ms;
      latency_after = Take(MeasureGraphLatency(best, timing, o->cost.num_threads)).median_ms;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();

    std::printf("model            %s\n", o->model.model.c_str());
    std::printf("search           %s (stopped: %s after %d iterations, %lld candidates costed)\n",
                search.algorithm.c_str(), StopReasonName(r.reason), r.iterations,
                static_cast<long long>(r.candidates_evaluated));
    std::printf("cost model       %s\n", cost->Name().c_str());
    std::printf("initial cost     %.4f ms\n", r.initial_cost_ms);
    std::printf("final cost       %.4f ms\n", final_cost);
    std::printf("speedup          %.3fx\n", final_cost > 0 ? r.initial_cost_ms / final_cost : 0.0);
    std::printf("operators        %d -> %d\n", original.NumOperators(), best.NumOperators());
    std::printf("rewrites         %zu\n", r.steps.size());
    for (const SearchStep& s : r.steps) std::printf("  %-44s %.4f ms\n", s.rule.c_str(), s.cost_ms);
    std::printf("verified         %s (max abs error %.3g, max rel error %.3g, tolerance %.0e)\n",
                v.verified ? "yes" : "NO", v.max_abs, v.max_rel, o->rtol);
    if (latency_before > 0) {
      std::printf("latency (CPU)    %.2f ms -> %.2f ms measured (%.3fx; the cost model predicted %.3fx)\n",
                  latency_before, latency_after, latency_before / latency_after,
                  final_cost > 0 ? r.initial_cost_ms / final_cost : 0.0);
    }
    std::printf("time             %.2f s\n", seconds);

    if (!o->report.empty()) {
      std::ostringstream js;
      js << "{\n  \"model\": " << JsonString(o->model.model) << ",\n  \"search\": " << JsonString(search.algorithm)
         << ",\n  \"cost_model\": " << JsonString(cost->Name())
         << ",\n  \"initial_cost_ms\": " << JsonNumber(r.initial_cost_ms)
         << ",\n  \"final_cost_ms\": " << JsonNumber(final_cost)
         << ",\n  \"speedup\": " << JsonNumber(final_cost > 0 ? r.initial_cost_ms / final_cost : 0)
         << ",\n  \"stop_reason\": " << JsonString(StopReasonName(r.reason)) << ",\n  \"steps\": [";
      for (size_t i = 0; i < r.steps.size(); ++i) {
        js << (i ? "," : "") << "\n    {\"rule\": " << JsonString(r.steps[i].rule)
           << ", \"cost_ms\": " << JsonNumber(r.steps[i].cost_ms) << "}";
      }
      js << (r.steps.empty() ? "" : "\n  ") << "],\n  \"verified\": " << (v.verified ? "true" : "false")
         << ",\n  \"max_abs_error\": " << JsonNumber(v.max_abs) << ",\n  \"max_rel_error\": " << JsonNumber(v.max_rel)
         << ",\n  \"seconds\": " << JsonNumber(seconds)
         << ",\n  \"search_seconds\": " << JsonNumber(r.seconds)
         << ",\n  \"latency_before_ms\": " << JsonNumber(latency_before)
         << ",\n  \"latency_after_ms\": " << JsonNumber(latency_after) << ",\n  \"nodes_before\": " << original.num_nodes()
         << ",\n  \"nodes_after\": " << best.num_nodes() << "\n}\n";
      const std::string tmp = o->report + ".tmp";
      {
        std::ofstream f(tmp);
        f << js.str();
        if (!f.flush()) throw CommandError("cannot write " + o->report);
      }
      std::filesystem::rename(tmp, o->report);
    }
    if (!v.verified) {
      throw CommandError("the optimised graph does not match the input (" + v.message + "); nothing written");
    }
    if (!o->out.empty()) {
      Check(ExportOnnxFile(best, o->out));
      std::printf("wrote            %s\n", o->out.c_str());
    }
  });
}

}  // namespace rewire::cli
