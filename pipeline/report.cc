#include "pipeline/report.h"

namespace rewire {
namespace {

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

void LatencyJson(const OptimizeReport& r, Json& js) {
  const LatencyReport& l = r.latency;
  js["latency_before_ms"] = JsonDecimal(l.before_ms);
  js["latency_after_ms"] = JsonDecimal(l.after_ms);
  js["latency_device"] = l.device;
  js["measured_speedup"] = JsonDecimal(Ratio(l.before_ms, l.after_ms));
  js["cuda_graph"] = {{"used", l.graph_used},
                      {"before_ms", JsonDecimal(l.graph_before_ms)},
                      {"after_ms", JsonDecimal(l.graph_after_ms)},
                      {"note", l.graph_note}};
  js["device_check"] = {{"checked", l.checked},
                        {"equal", l.check_ok},
                        {"max_rel_error_input", JsonDecimal(l.check_rel_before)},
                        {"max_rel_error_result", JsonDecimal(l.check_rel_after)},
                        {"tolerance", JsonDecimal(l.tolerance)},
                        {"message", l.check_message}};
}

void VerdictJson(const OptimizeReport& r, Json& js) {
  const RuntimeVerdict& v = r.verdict;
  js["runtime"] = v.runtime;
  js["runtime_before_ms"] = JsonDecimal(v.before_ms);
  js["runtime_after_ms"] = JsonDecimal(v.after_ms);
  js["runtime_speedup"] = JsonDecimal(v.speedup);
  js["runtime_speedup_interval"] =
      Json::array({JsonDecimal(v.speedup_lo), JsonDecimal(v.speedup_hi)});
  js["runtime_confidence"] = JsonDecimal(v.confidence);
  js["runtime_max_rel_error_input"] = JsonDecimal(v.max_rel_before);
  js["runtime_max_rel_error_result"] = JsonDecimal(v.max_rel_after);
  js["decision"] = v.decision;
  js["decision_reason"] = v.reason;
  js["written_rewrites"] = r.written_rewrites;
  js["runtime_rounds"] = v.rounds;
  js["runtime_repeats"] = v.repeats;
  js["runtime_sessions"] = v.sessions;
  js["runtime_rounds_faster"] = v.rounds_faster;
  Json judged = Json::array();
  for (const CandidateTiming& c : v.candidates) {
    judged.push_back(Json{
        {"label", c.label},
        {"ms", JsonDecimal(c.ms)},
        {"speedup", JsonDecimal(c.speedup)},
        {"speedup_interval", Json::array({JsonDecimal(c.speedup_lo), JsonDecimal(c.speedup_hi)})},
        {"max_rel_error", JsonDecimal(c.max_rel)}});
  }
  js["runtime_candidates"] = std::move(judged);
  js["runtime_chosen"] = v.chosen;
}

/// The search's own figures, by name (ints as integers, figures as decimals, texts as strings).
Json StatsJson(const SearchStats& stats) {
  Json out = Json::object();
  for (const auto& [name, value] : stats.entries()) {
    if (const auto* i = std::get_if<int64_t>(&value)) {
      out[name] = *i;
    } else if (const auto* d = std::get_if<double>(&value)) {
      out[name] = JsonDecimal(*d);
    } else {
      out[name] = std::get<std::string>(value);
    }
  }
  return out;
}

}  // namespace

Json ReportJson(const OptimizeReport& r) {
  const SearchResult& s = r.search_result;
  const FinishedGraph& done = r.result;
  Json steps = Json::array();
  for (const SearchStep& step : s.steps) {
    Json j{{"rule", step.rule}, {"cost_ms", JsonDecimal(step.cost_ms)}};
    if (step.evaluations >= 0) j["evaluations"] = step.evaluations;
    steps.push_back(std::move(j));
  }
  Json predicted = Json::array();
  for (const CostPrediction& p : done.predictions) {
    predicted.push_back(Json{{"cost_model", p.cost_model},
                             {"initial_ms", JsonDecimal(p.initial_ms)},
                             {"final_ms", JsonDecimal(p.final_ms)},
                             {"speedup", JsonDecimal(Ratio(p.initial_ms, p.final_ms))}});
  }
  Json js;
  js["model"] = r.label;
  js["search"] = r.search;
  js["cost_model"] = r.cost_model;
  js["cost_unit"] = r.cost_unit;  // the unit of the *_cost_ms figures ("ms" unless it counts)
  js["initial_cost_ms"] = JsonDecimal(s.initial_cost_ms);
  js["final_cost_ms"] = JsonDecimal(done.final_cost_ms);
  js["speedup"] = JsonDecimal(Ratio(s.initial_cost_ms, done.final_cost_ms));
  js["stop_reason"] = StopReasonName(s.reason);
  js["steps"] = std::move(steps);
  js["verified"] = done.equivalence.verified;
  js["max_abs_error"] = JsonDecimal(done.equivalence.max_abs);
  js["max_rel_error"] = JsonDecimal(done.equivalence.max_rel);
  js["seconds"] = JsonDecimal(r.seconds);
  js["search_seconds"] = JsonDecimal(s.seconds);
  LatencyJson(r, js);
  js["predicted"] = std::move(predicted);
  js["nodes_before"] = r.nodes_before;
  js["nodes_after"] = r.nodes_after;
  js["iterations"] = s.iterations;
  const MeasurementCounts& m = r.measurements;
  js["measurements"] = Json{{"measured", m.measured},
                            {"seconds", JsonDecimal(m.seconds)},
                            {"cache_hits", m.cache_hits},
                            {"memo_hits", m.memo_hits},
                            {"budget_left", m.budget_left}};
  js["candidates_evaluated"] = s.candidates_evaluated;
  if (!s.stats.empty()) js["search_stats"] = StatsJson(s.stats);
  if (!r.verdict.decision.empty()) VerdictJson(r, js);
  js["onnx_custom_ops"] = r.onnx_custom_ops;
  return js;
}

}  // namespace rewire
