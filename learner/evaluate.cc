// `rewire eval`: a checkpoint's searches (rl rollouts, the guided beam search) against the
// non-learned ones on every evaluated model, through the optimise pipeline (pipeline/optimize.h).

#include "learner/evaluate.h"

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "graph/files.h"
#include "graph/json.h"
#include "learner/agent.h"
#include "learner/agent_searches.h"
#include "learner/policy.h"
#include "learner/training.h"
#include "pipeline/optimize.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

/// The request every policy search of one evaluation shares.
OptimizeRequest PolicyRequest(const TrainConfig& c, const std::string& label,
                              const std::string& search, const std::string& checkpoint) {
  OptimizeRequest q;
  q.label = label;
  q.search = search;
  q.search_options = {{"policy", checkpoint}, {"horizon", std::to_string(c.env.horizon)}};
  q.limits.seed = c.run.seed;
  q.limits.max_candidates = static_cast<size_t>(c.env.max_candidates);
  q.finish.rtol = 1e-3;
  q.finish.export_onnx = true;
  return q;
}

/// One policy search through the pipeline (search, fold, cost, verify, export).
StatusOr<OptimizeReport> RunPolicySearch(OptimizeRequest q, const SearchRegistry& searches,
                                         const Graph& graph, const Resources& res) {
  REWIRE_ASSIGN_OR_RETURN(OptimizePipeline pipeline,
                          OptimizePipeline::Prepare(std::move(q), searches));
  return pipeline.Run(graph, res.rules, *res.cost);
}

std::string FileName(const std::string& label) {
  std::string file = label;
  for (char& ch : file) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
  }
  return file;
}

/// The policy's searches and the baselines on one model; writes the best verified graph of the
/// policy's searches to `optimized_dir`.
StatusOr<EvalResult> EvaluateModel(const TrainConfig& c, const std::string& checkpoint,
                                   const std::string& label, const Graph& graph,
                                   const Resources& res, const SearchRegistry& searches,
                                   const fs::path& optimized_dir) {
  EvalResult r;
  r.model = label;
  r.samples = c.eval.samples;
  OptimizeRequest rl = PolicyRequest(c, label, "rl", checkpoint);
  rl.search_options.emplace_back("samples", std::to_string(c.eval.samples));
  REWIRE_ASSIGN_OR_RETURN(OptimizeReport best, RunPolicySearch(rl, searches, graph, res));
  const SearchResult& found = best.search_result;
  r.initial_cost_ms = found.initial_cost_ms;
  r.greedy_policy_cost_ms = found.stats.Number("greedy_policy_cost_ms");
  if (c.eval.samples > 0) r.sampled_best_cost_ms = found.stats.Number("sampled_best_cost_ms");
  r.rl_seconds = found.seconds;
  if (c.eval.guided_budget > 0) {
    OptimizeRequest guided = PolicyRequest(c, label, "guided", checkpoint);
    guided.limits.budget = c.eval.guided_budget;
    guided.search_options.emplace_back("beam-width", std::to_string(c.eval.beam_width));
    guided.search_options.emplace_back("expand", std::to_string(c.eval.expand));
    REWIRE_ASSIGN_OR_RETURN(OptimizeReport g, RunPolicySearch(guided, searches, graph, res));
    r.guided_cost_ms = g.search_result.final_cost_ms;
    r.guided_seconds = g.search_result.seconds;
    r.guided_expansions = g.search_result.iterations;
    if (g.search_result.final_cost_ms < found.final_cost_ms) best = std::move(g);
  }
  const Equivalence& eq = best.result.equivalence;
  r.verified = eq.verified;
  r.max_rel_error = eq.max_rel;
  if (eq.verified) {
    r.onnx_path = (optimized_dir / (FileName(label) + ".onnx")).string();
    REWIRE_RETURN_IF_ERROR(WriteFileAtomic(r.onnx_path, best.written));
  }
  for (const std::string& b : c.eval.baselines) {
    SearchLimits limits;
    limits.seed = c.run.seed;
    limits.max_candidates = static_cast<size_t>(c.env.max_candidates);
    limits.budget = c.eval.budget;
    REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Search> search, searches.Make(b));
    REWIRE_ASSIGN_OR_RETURN(SearchResult sr, search->Run(graph, res.rules, *res.cost, limits));
    r.baselines.emplace_back(b, sr.final_cost_ms);
    r.baseline_seconds.emplace_back(b, sr.seconds);
  }
  r.verify_message = eq.message;
  return r;
}

std::string EvalLine(const EvalResult& r) {
  const double rl_best = r.sampled_best_cost_ms > 0
                             ? std::min(r.sampled_best_cost_ms, r.greedy_policy_cost_ms)
                             : r.greedy_policy_cost_ms;
  std::string base;
  for (const auto& [name, ms] : r.baselines) {
    base += fmt::format("  {} {:.3f}x", name, r.initial_cost_ms / ms);
  }
  std::string guided;
  if (r.guided_cost_ms > 0) {
    guided =
        fmt::format("  guided {:.3f}x ({} graphs, {:.1f}s)", r.initial_cost_ms / r.guided_cost_ms,
                    r.guided_expansions, r.guided_seconds);
  }
  return fmt::format(
      "{:<28} rl {:.3f}x (greedy policy {:.3f}x, best of {} samples, {:.1f}s){}{}  verified {}",
      r.model, r.initial_cost_ms / rl_best, r.initial_cost_ms / r.greedy_policy_cost_ms, r.samples,
      r.rl_seconds, guided, base, r.verified ? "yes" : "NO: " + r.verify_message);
}

/// eval.json: the format `rewire report` reads.
Json EvalJson(const std::string& checkpoint, int64_t policy_version, const std::string& cost,
              const std::vector<EvalResult>& results) {
  Json rows = Json::array();
  for (const EvalResult& r : results) {
    Json baselines = Json::object(), baseline_seconds = Json::object();
    for (const auto& [name, ms] : r.baselines) baselines[name] = JsonDecimal(ms, 8);
    for (const auto& [name, s] : r.baseline_seconds) baseline_seconds[name] = JsonDecimal(s, 8);
    Json row;
    row["model"] = r.model;
    row["initial_cost_ms"] = JsonDecimal(r.initial_cost_ms, 8);
    row["greedy_policy_cost_ms"] = JsonDecimal(r.greedy_policy_cost_ms, 8);
    row["sampled_best_cost_ms"] =
        r.samples > 0 ? JsonDecimal(r.sampled_best_cost_ms, 8) : Json(nullptr);
    row["samples"] = r.samples;
    row["baselines"] = std::move(baselines);
    row["baseline_seconds"] = std::move(baseline_seconds);
    row["rl_seconds"] = JsonDecimal(r.rl_seconds, 8);
    row["guided_cost_ms"] = r.guided_cost_ms > 0 ? JsonDecimal(r.guided_cost_ms, 8) : Json(nullptr);
    row["guided_seconds"] = JsonDecimal(r.guided_seconds, 8);
    row["guided_expansions"] = r.guided_expansions;
    row["verified"] = r.verified;
    row["max_rel_error"] = JsonDecimal(r.max_rel_error, 8);
    row["onnx"] = r.onnx_path;
    rows.push_back(std::move(row));
  }
  Json js;
  js["policy"] = checkpoint;
  js["policy_version"] = policy_version;
  js["cost_model"] = cost;
  js["results"] = std::move(rows);
  return js;
}

}  // namespace

StatusOr<std::vector<EvalResult>> Evaluate(const TrainConfig& c, const RunPaths& paths,
                                           const std::string& checkpoint,
                                           const std::function<void(const std::string&)>& log) {
  REWIRE_RETURN_IF_ERROR(ValidateTrainConfig(c));
  SetComputeThreads(c.run.threads);
  // The checkpoint must fit the config's agent (its GNN's shape): one clear error before any
  // search.
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent,
                          Agents().Create(c.run.agent, c, c.run.seed));
  REWIRE_ASSIGN_OR_RETURN(const RunState run, agent->LoadCheckpoint(checkpoint, /*resume=*/false));
  const std::vector<ModelSpec>& specs = c.eval.models.empty() ? c.env.models : c.eval.models;
  REWIRE_ASSIGN_OR_RETURN(Resources res, LoadResources(c, paths, specs));
  const fs::path dir(c.run.dir);
  std::error_code ec;
  fs::create_directories(dir / "optimized", ec);
  const SearchRegistry& searches = AllSearches();
  std::vector<EvalResult> results;
  for (const auto& [label, graph] : res.models) {
    REWIRE_ASSIGN_OR_RETURN(
        EvalResult r, EvaluateModel(c, checkpoint, label, graph, res, searches, dir / "optimized"));
    if (log) log(EvalLine(r));
    results.push_back(std::move(r));
  }
  const Json js = EvalJson(checkpoint, run.policy_version, res.cost->Name(), results);
  REWIRE_RETURN_IF_ERROR(WriteFileAtomic((dir / "eval.json").string(), JsonText(js, 2) + "\n"));
  return results;
}

}  // namespace rewire
