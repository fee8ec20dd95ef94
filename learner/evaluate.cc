// `rewire eval`: a checkpoint's searches (rl rollouts, the guided beam search) against the
// non-learned ones on every evaluated model, through the optimise pipeline (pipeline/optimize.h).

#include "learner/evaluate.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "graph/files.h"
#include "graph/json.h"
#include "graph/onnx/onnx_io.h"
#include "learner/agent.h"
#include "learner/agent_searches.h"
#include "learner/policy.h"
#include "learner/training.h"
#include "pipeline/optimize.h"

namespace rewire {
namespace {

namespace fs = std::filesystem;

/// What every model's evaluation shares.
struct Evaluation {
  const TrainConfig& c;
  std::string checkpoint;
  const Resources& res;
  const SearchRegistry& searches;
  FinishOptions finish;  // verification, ONNX, eval.also_cost
  fs::path optimized_dir;
  OrtRunner* ort = nullptr;  // eval.runtime "ort"
  std::function<void(const std::string&)> log;
};

/// The request of one search of an evaluation.
OptimizeRequest EvalRequest(const Evaluation& e, const std::string& label,
                            const std::string& search) {
  OptimizeRequest q;
  q.label = label;
  q.search = search;
  q.limits.seed = e.c.run.seed;
  q.limits.max_candidates = static_cast<size_t>(e.c.env.max_candidates);
  q.finish = e.finish;
  return q;
}

/// The request every policy search of one evaluation shares.
OptimizeRequest PolicyRequest(const Evaluation& e, const std::string& label,
                              const std::string& search) {
  OptimizeRequest q = EvalRequest(e, label, search);
  q.search_options = {{"policy", e.checkpoint}, {"horizon", std::to_string(e.c.env.horizon)}};
  return q;
}

/// One search through the pipeline (search, fold, cost, verify, export).
StatusOr<OptimizeReport> RunThroughPipeline(OptimizeRequest q, const Evaluation& e,
                                            const Graph& graph) {
  REWIRE_ASSIGN_OR_RETURN(OptimizePipeline pipeline,
                          OptimizePipeline::Prepare(std::move(q), e.searches));
  return pipeline.Run(graph, e.res.rules, *e.res.cost);
}

std::string FileName(const std::string& label) {
  std::string file = label;
  for (char& ch : file) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') ch = '_';
  }
  return file;
}

/// eval.runtime's timing options.
RuntimeJudgeOptions MeasureOptions(const TrainConfig& c) {
  RuntimeJudgeOptions o;
  o.runtime = c.eval.runtime;
  o.threads = c.eval.runtime_threads;
  o.rounds = c.eval.runtime_rounds;
  o.seed = c.run.seed;
  return o;
}

/// Times every verified result of `reports` (search name, report) against the input in one set
/// of alternating rounds; fills r's runtime figures. A result that did not verify is not timed
/// (and logged); results that are the same graph are timed once and share its figures.
Status MeasureResults(const Evaluation& e, const Graph& graph,
                      const std::vector<std::pair<std::string, const OptimizeReport*>>& reports,
                      EvalResult& r) {
  const TrainConfig& c = e.c;
  const auto& log = e.log;
  std::vector<RuntimeCandidate> candidates;              // one per distinct graph
  std::vector<uint64_t> hashes;                          // of candidates
  std::vector<std::pair<size_t, MeasuredResult>> timed;  // candidate index, its row
  for (const auto& [name, report] : reports) {
    const SearchResult& sr = report->search_result;
    if (!report->result.equivalence.verified || report->result.onnx.empty()) {
      if (log) {
        log(r.model + ": " + name + "'s result does not match the input (" +
            report->result.equivalence.message + "): not measured");
      }
      continue;
    }
    MeasuredResult m;
    m.search = name;
    m.predicted_speedup = sr.final_cost_ms > 0 ? sr.initial_cost_ms / sr.final_cost_ms : 0;
    for (const CostPrediction& p : report->result.predictions)
      m.also_predicted.emplace_back(p.cost_model, p.final_ms > 0 ? p.initial_ms / p.final_ms : 0);
    const uint64_t hash = report->result.graph.Hash();
    const size_t same = std::find(hashes.begin(), hashes.end(), hash) - hashes.begin();
    if (same < candidates.size()) {
      m.same_graph_as = candidates[same].label;
    } else {
      candidates.push_back({name, &report->result.graph, report->result.onnx});
      hashes.push_back(hash);
    }
    timed.emplace_back(same, std::move(m));
  }
  if (candidates.empty()) return Status::Ok();
  REWIRE_ASSIGN_OR_RETURN(const std::string input_onnx, ExportOnnxBytes(graph, e.finish.onnx));
  const RuntimeJudgeOptions o = MeasureOptions(c);
  if (log) {
    log(fmt::format("{}: measuring the input and {} distinct results end to end in {} ({} rounds)",
                    r.model, candidates.size(), c.eval.runtime, o.rounds));
  }
  REWIRE_ASSIGN_OR_RETURN(const RuntimeComparison cmp,
                          CompareInRuntime(graph, input_onnx, candidates, e.ort, o));
  r.runtime = cmp.runtime;
  r.input_measured_ms = cmp.input_ms;
  r.runtime_rounds = cmp.rounds;
  for (auto& [slot, m] : timed) {
    const CandidateTiming& t = cmp.candidates[slot];
    m.ms = t.ms;
    m.speedup = t.speedup;
    m.speedup_lo = t.speedup_lo;
    m.speedup_hi = t.speedup_hi;
    m.round_ms = t.round_ms;
    m.rounds_faster = t.rounds_faster;
    r.measured.push_back(std::move(m));
  }
  const auto learned = [&c](const std::string& search) {
    return search == "rl" || search == "guided" ||
           std::find(c.eval.policy_searches.begin(), c.eval.policy_searches.end(), search) !=
               c.eval.policy_searches.end();
  };
  for (const MeasuredResult& a : r.measured) {
    if (!learned(a.search)) continue;
    for (const MeasuredResult& b : r.measured) {
      if (learned(b.search)) continue;
      const PairedSpeedup p = PairRounds(b.round_ms, a.round_ms, cmp.confidence);
      r.head_to_head.push_back({a.search, b.search, p.speedup, p.lo, p.hi});
    }
  }
  return Status::Ok();
}

/// The policy's searches and the baselines on one model; writes the best verified graph of the
/// policy's searches to e.optimized_dir; with eval.runtime, measures every result.
StatusOr<EvalResult> EvaluateModel(const Evaluation& e, const std::string& label,
                                   const Graph& graph) {
  const TrainConfig& c = e.c;
  EvalResult r;
  r.model = label;
  r.samples = c.eval.samples;
  OptimizeRequest rl = PolicyRequest(e, label, "rl");
  rl.search_options.emplace_back("samples", std::to_string(c.eval.samples));
  REWIRE_ASSIGN_OR_RETURN(const OptimizeReport rl_report, RunThroughPipeline(rl, e, graph));
  const SearchResult& found = rl_report.search_result;
  r.initial_cost_ms = found.initial_cost_ms;
  r.greedy_policy_cost_ms = found.stats.Number("greedy_policy_cost_ms");
  if (c.eval.samples > 0) r.sampled_best_cost_ms = found.stats.Number("sampled_best_cost_ms");
  r.rl_seconds = found.seconds;
  std::vector<std::pair<std::string, const OptimizeReport*>> reports = {{"rl", &rl_report}};
  const OptimizeReport* best = &rl_report;
  OptimizeReport guided_report;
  if (c.eval.guided_budget > 0) {
    OptimizeRequest guided = PolicyRequest(e, label, "guided");
    guided.limits.budget = c.eval.guided_budget;
    guided.search_options.emplace_back("beam-width", std::to_string(c.eval.beam_width));
    guided.search_options.emplace_back("expand", std::to_string(c.eval.expand));
    REWIRE_ASSIGN_OR_RETURN(guided_report, RunThroughPipeline(guided, e, graph));
    const SearchResult& g = guided_report.search_result;
    r.guided_cost_ms = g.final_cost_ms;
    r.guided_seconds = g.seconds;
    r.guided_expansions = g.iterations;
    if (g.final_cost_ms < found.final_cost_ms) best = &guided_report;
    reports.emplace_back("guided", &guided_report);
  }
  std::vector<OptimizeReport> policy_reports;
  policy_reports.reserve(c.eval.policy_searches.size());
  for (const std::string& name : c.eval.policy_searches) {
    OptimizeRequest q = PolicyRequest(e, label, name);
    q.limits.budget = c.eval.budget;
    if (c.eval.samples > 0)
      q.search_options.emplace_back("samples", std::to_string(c.eval.samples));
    REWIRE_ASSIGN_OR_RETURN(OptimizeReport pr, RunThroughPipeline(q, e, graph));
    r.policy_searches.push_back({name, pr.search_result.final_cost_ms, pr.search_result.seconds});
    policy_reports.push_back(std::move(pr));  // reserved: the pointers below stay valid
    const OptimizeReport* added = &policy_reports.back();
    if (added->search_result.final_cost_ms < best->search_result.final_cost_ms) best = added;
    reports.emplace_back(name, added);
  }
  const Equivalence& eq = best->result.equivalence;
  r.verified = eq.verified;
  r.max_rel_error = eq.max_rel;
  r.verify_message = eq.message;
  if (eq.verified) {
    r.onnx_path = (e.optimized_dir / (FileName(label) + ".onnx")).string();
    REWIRE_RETURN_IF_ERROR(WriteFileAtomic(r.onnx_path, best->written));
  }
  std::vector<OptimizeReport> baseline_reports;
  baseline_reports.reserve(c.eval.baselines.size());
  for (const std::string& b : c.eval.baselines) {
    OptimizeRequest q = EvalRequest(e, label, b);
    q.limits.budget = c.eval.budget;
    q.finish.export_onnx = !c.eval.runtime.empty();
    REWIRE_ASSIGN_OR_RETURN(OptimizeReport br, RunThroughPipeline(q, e, graph));
    r.baselines.emplace_back(b, br.search_result.final_cost_ms);
    r.baseline_seconds.emplace_back(b, br.search_result.seconds);
    baseline_reports.push_back(std::move(br));
  }
  if (!c.eval.runtime.empty()) {
    for (size_t i = 0; i < baseline_reports.size(); ++i)
      reports.emplace_back(c.eval.baselines[i], &baseline_reports[i]);
    REWIRE_RETURN_IF_ERROR(MeasureResults(e, graph, reports, r));
  }
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
  for (const EvalResult::PolicySearch& ps : r.policy_searches) {
    guided += fmt::format("  {} {:.3f}x ({:.1f}s)", ps.search, r.initial_cost_ms / ps.cost_ms,
                          ps.seconds);
  }
  std::string line = fmt::format(
      "{:<28} rl {:.3f}x (likeliest rewrites {:.3f}x, {}; {:.1f}s){}{}  verified {}", r.model,
      r.initial_cost_ms / rl_best, r.initial_cost_ms / r.greedy_policy_cost_ms,
      r.sampled_best_cost_ms > 0 ? fmt::format("cheapest of {} sampled rollouts {:.3f}x", r.samples,
                                               r.initial_cost_ms / r.sampled_best_cost_ms)
                                 : std::string("no sampled rollouts"),
      r.rl_seconds, guided, base, r.verified ? "yes" : "NO: " + r.verify_message);
  if (!r.measured.empty()) {
    line += fmt::format("\n{:<28} measured in {} (input {:.3f} ms):", "", r.runtime,
                        r.input_measured_ms);
    for (const MeasuredResult& m : r.measured) {
      line += fmt::format("  {} {:.3f}x [{:.3f}, {:.3f}] ({}/{}{})", m.search, m.speedup,
                          m.speedup_lo, m.speedup_hi, m.rounds_faster, r.runtime_rounds,
                          m.same_graph_as.empty() ? "" : ", the graph of " + m.same_graph_as);
    }
    if (!r.head_to_head.empty()) {
      line += fmt::format("\n{:<28} head to head (learned / baseline, same rounds):", "");
      for (const EvalResult::HeadToHead& h : r.head_to_head) {
        line += fmt::format("  {} vs {} {:.3f}x [{:.3f}, {:.3f}]", h.learned, h.baseline, h.speedup,
                            h.lo, h.hi);
      }
    }
  }
  return line;
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
    Json policy_searches = Json::object();
    for (const EvalResult::PolicySearch& ps : r.policy_searches) {
      policy_searches[ps.search] =
          Json{{"cost_ms", JsonDecimal(ps.cost_ms, 8)}, {"seconds", JsonDecimal(ps.seconds, 8)}};
    }
    row["policy_searches"] = std::move(policy_searches);
    row["verified"] = r.verified;
    row["max_rel_error"] = JsonDecimal(r.max_rel_error, 8);
    row["onnx"] = r.onnx_path;
    if (r.measured.empty()) {
      row["measured"] = nullptr;
    } else {
      Json results = Json::object();
      for (const MeasuredResult& m : r.measured) {
        Json one;
        one["predicted_speedup"] = JsonDecimal(m.predicted_speedup, 6);
        if (!m.also_predicted.empty()) {
          Json also = Json::object();
          for (const auto& [model, x] : m.also_predicted) also[model] = JsonDecimal(x, 6);
          one["also_predicted_speedup"] = std::move(also);
        }
        one["ms"] = JsonDecimal(m.ms, 6);
        one["speedup"] = JsonDecimal(m.speedup, 6);
        one["speedup_interval"] =
            Json::array({JsonDecimal(m.speedup_lo, 6), JsonDecimal(m.speedup_hi, 6)});
        one["rounds_faster"] = m.rounds_faster;
        one["same_graph_as"] = m.same_graph_as.empty() ? Json(nullptr) : Json(m.same_graph_as);
        results[m.search] = std::move(one);
      }
      Json measured;
      measured["runtime"] = r.runtime;
      measured["rounds"] = r.runtime_rounds;
      measured["input_ms"] = JsonDecimal(r.input_measured_ms, 6);
      measured["results"] = std::move(results);
      Json h2h = Json::array();
      for (const EvalResult::HeadToHead& h : r.head_to_head) {
        h2h.push_back(
            Json{{"learned", h.learned},
                 {"baseline", h.baseline},
                 {"speedup", JsonDecimal(h.speedup, 6)},
                 {"interval", Json::array({JsonDecimal(h.lo, 6), JsonDecimal(h.hi, 6)})}});
      }
      measured["head_to_head"] = std::move(h2h);
      row["measured"] = std::move(measured);
    }
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
  Evaluation e{c, checkpoint, res, AllSearches(), {}, dir / "optimized", nullptr, log};
  e.finish.rtol = 1e-3;
  e.finish.export_onnx = true;
  for (const std::string& name : c.eval.also_cost) {
    CostModelOptions other;
    other.kind = name;
    other.device = c.env.device;
    other.devices_dir = paths.devices_dir;
    other.cache_path = c.env.cost_cache;
    e.finish.also_cost.push_back(std::move(other));
  }
  // The runtime starts before any search: a missing one is an error that costs nothing.
  std::unique_ptr<OrtRunner> ort;
  if (!c.eval.runtime.empty()) {
    StatusOr<std::unique_ptr<OrtRunner>> started = StartRuntime(MeasureOptions(c));
    if (!started.ok()) return started.status().WithContext("eval.runtime");
    ort = std::move(*started);
    e.ort = ort.get();
  }
  std::vector<EvalResult> results;
  for (const auto& [label, graph] : res.models) {
    REWIRE_ASSIGN_OR_RETURN(EvalResult r, EvaluateModel(e, label, graph));
    if (log) log(EvalLine(r));
    results.push_back(std::move(r));
  }
  Json js = EvalJson(checkpoint, run.policy_version, res.cost->Name(), results);
  if (!c.eval.runtime.empty()) js["runtime_threads"] = c.eval.runtime_threads;
  REWIRE_RETURN_IF_ERROR(WriteFileAtomic((dir / "eval.json").string(), JsonText(js, 2) + "\n"));
  return results;
}

}  // namespace rewire
