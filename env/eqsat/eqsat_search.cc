#include "env/eqsat/eqsat_search.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "env/eqsat/cycles.h"
#include "env/eqsat/extract.h"
#include "env/eqsat/learned_builder.h"
#include "env/eqsat/mcts.h"
#include "env/eqsat/saturate.h"

namespace rewire::eqsat {
namespace {

StopReason ToStopReason(SaturationStop s) {
  switch (s) {
    case SaturationStop::kSaturated:
      return StopReason::kSaturated;
    case SaturationStop::kNodeLimit:
      return StopReason::kNodeLimit;
    case SaturationStop::kIterationLimit:
      return StopReason::kIterationLimit;
    case SaturationStop::kTimeLimit:
      return StopReason::kTimeLimit;
  }
  return StopReason::kSaturated;
}

StopReason ToStopReason(BuildStop s) {
  switch (s) {
    case BuildStop::kSaturated:
      return StopReason::kSaturated;
    case BuildStop::kNodeLimit:
      return StopReason::kNodeLimit;
    case BuildStop::kStepLimit:
      return StopReason::kIterationLimit;
    case BuildStop::kTimeLimit:
      return StopReason::kTimeLimit;
    case BuildStop::kValue:
    case BuildStop::kPolicy:
    case BuildStop::kPatience:
      return StopReason::kLearnedStop;
  }
  return StopReason::kSaturated;
}

/// Records rules_applied (the rules applied, most applied first) where any rule was applied.
void SetRulesApplied(SearchStats& stats, const std::vector<ERule>& rules,
                     const std::vector<size_t>& applied_by_rule) {
  std::string text = AppliedRulesText(rules, applied_by_rule);
  if (!text.empty()) stats.Set("rules_applied", std::move(text));
}

/// The options both searches take: the e-graph's size, cycle filtering, the extraction.
void DeclareEgraphOptions(OptionSet& set, EqsatOptions& o) {
  set.Add("egraph-nodes", &o.node_limit,
          "E-nodes the e-graph may hold; no rewrite is applied that could take it past this")
      .Above(0);
  set.Switch("no-cycle-filter", &o.filter_cycles, false,
             "Keep e-nodes that close cycles (the ILP's cycle cuts still keep the "
             "extracted graph acyclic)");
  set.Add("extract", &o.extraction,
          "greedy (each e-class's cheapest e-node) or ilp (CBC, with the greedy result as its "
          "start and fallback)")
      .OneOf({"greedy", "ilp"});
  set.Add("ilp-time-limit", &o.ilp_time_limit_s, "Seconds the ILP solver may take").Above(0);
  set.Add("ilp-max-nodes", &o.ilp_max_nodes,
          "Extractable e-nodes above which no ILP is built (greedy extraction is used, with a "
          "note)")
      .Above(0);
  set.Switch("ilp-no-warm-start", &o.ilp_warm_start, false,
             "Do not give the ILP solver the greedy extraction as its first solution");
  set.Switch("ilp-no-requirement-rows", &o.ilp_requirement_rows, false,
             "Do not strengthen the ILP's relaxation with requirement rows (an e-node's choice "
             "requires a class: no more of them chosen than of it) before solving it");
}

/// What growing the e-graph did, whichever way it grew.
struct Growth {
  StopReason reason = StopReason::kSaturated;
  int iterations = 0;
  size_t applied = 0, matches = 0, cycle_skips = 0;
  bool mcts = false;  // grown by tree search
  size_t simulations = 0;
  /// The grower's own figures (rules_applied, a learned builder's), reported after the e-graph's.
  SearchStats extra;
};

/// The figures every grower's report has (SaturationReport, MctsReport, BuildReport): its stop,
/// and what its `iterations` rounds matched and applied.
template <typename Report>
Growth GrowthOf(const Report& r, int iterations) {
  Growth g;
  g.reason = ToStopReason(r.stop);
  g.iterations = iterations;
  g.applied = r.applied;
  g.matches = r.matches;
  g.cycle_skips = r.cycle_skips;
  return g;
}

/// The e-graph of `graph`, its rules, and the options of one round of rewriting.
struct Start {
  RewriteState state;
  std::vector<ERule> erules;
  RoundOptions round;
};

StatusOr<Start> StartEgraph(const Graph& graph, const std::vector<Graph>& seeds,
                            const std::vector<rules::Rule>& rules, const EqsatOptions& eo,
                            const SearchLimits& limits, Clock::time_point start) {
  REWIRE_ASSIGN_OR_RETURN(EGraph egraph, EGraph::FromGraph(graph));
  for (const Graph& seed : seeds) REWIRE_RETURN_IF_ERROR(egraph.AddSeed(seed));
  Start s{RewriteState{std::move(egraph), {}}, MakeERules(rules), {}};
  s.round.node_limit = eo.node_limit;
  s.round.filter_cycles = eo.filter_cycles;
  if (limits.time_limit_s > 0) s.round.deadline = start + ClockSeconds(limits.time_limit_s);
  if (eo.filter_cycles) FilterCycles(s.state.egraph);
  return s;
}

/// Extracts the cheapest graph of the grown e-graph and fills the result and its stats.
Status Finish(const Graph& graph, const std::vector<Graph>& seeds, RewriteState& state,
              CostModel& cost, const EqsatOptions& eo, const Growth& growth,
              const SearchLimits& limits, int rounds, Clock::time_point start,
              SearchResult& result) {
  result.reason = growth.reason;
  result.iterations = growth.iterations;
  result.candidates_evaluated = static_cast<int64_t>(growth.applied);
  result.path_note = "the graph is extracted from the e-graph";
  const double build_seconds = SecondsSince(start);
  // The e-graph as extraction finds it.
  const size_t nodes = state.egraph.num_nodes(), classes = state.egraph.num_classes();
  const size_t blacklisted = state.egraph.num_blacklisted(), bytes = state.egraph.MemoryBytes();
  SearchStats& st = result.stats;
  auto count = [&st](const char* name, size_t n) { st.Set(name, static_cast<int64_t>(n)); };
  count("egraph_nodes", nodes);
  count("egraph_classes", classes);
  count("blacklisted", blacklisted);
  count("memory_bytes", bytes);
  count("matches", growth.matches);
  count("cycle_skips", growth.cycle_skips);

  ExtractOptions xo;
  xo.kind = eo.extraction;
  xo.ilp = {eo.ilp_time_limit_s, eo.ilp_max_nodes, eo.ilp_warm_start, eo.ilp_requirement_rows};
  REWIRE_ASSIGN_OR_RETURN(Extraction x, Extract(state.egraph, cost, xo));
  REWIRE_ASSIGN_OR_RETURN(result.final_cost_ms, GraphCostMs(cost, x.graph));
  std::string note = x.note;
  // A seed the extraction did not improve on (the e-graph holds it, but the additive part, the
  // ILP's time limit or the node limit can miss it) is kept instead.
  for (size_t i = 0; i < seeds.size(); ++i) {
    REWIRE_ASSIGN_OR_RETURN(const double seed_ms, GraphCostMs(cost, seeds[i]));
    if (seed_ms < result.final_cost_ms && seed_ms <= result.initial_cost_ms) {
      note += std::string(note.empty() ? "" : "; ") + "seed " + std::to_string(i + 1) +
              " costs less than the extraction: it is kept";
      x.graph = seeds[i];
      result.final_cost_ms = seed_ms;
    }
  }
  if (!seeds.empty()) count("seeds", seeds.size());
  if (result.final_cost_ms > result.initial_cost_ms) {
    note += std::string(note.empty() ? "" : "; ") + "the extracted graph costs more than " +
            "the input: the input is kept";
    result.best = graph;
    result.final_cost_ms = result.initial_cost_ms;
  } else {
    result.best = std::move(x.graph);
  }
  st.Set("extraction", x.kind);
  st.Set("note", note);
  st.Set("extracted_cost_ms", x.cost_ms);
  st.Set("greedy_cost_ms", x.greedy_cost_ms);
  st.Set("incumbent_cost_ms", x.incumbent_cost_ms);
  st.Set("build_seconds", build_seconds);
  st.Set("extract_seconds", x.seconds);
  st.Set("ilp_seconds", x.ilp_seconds);
  count("ilp_variables", x.ilp_variables);
  count("ilp_constraints", x.ilp_constraints);
  if (x.ilp_rounds > 0 || x.ilp_lp_rounds > 0) {
    count("ilp_lp_rounds", x.ilp_lp_rounds);
    count("ilp_requirement_rows", x.ilp_requirement_rows);
    count("ilp_rounds", x.ilp_rounds);
    count("ilp_cycle_cuts", x.ilp_cycle_cuts);
  }
  if (x.ilp_relaxation_bound_ms >= 0) {
    st.Set("ilp_plain_bound_ms", x.ilp_plain_bound_ms);
    st.Set("ilp_relaxation_bound_ms", x.ilp_relaxation_bound_ms);
  }
  if (x.ilp_bound_ms >= 0) {
    // The extraction gap: how far the cheapest additive extraction may be above the optimum.
    st.Set("ilp_bound_ms", x.ilp_bound_ms);
    st.Set("ilp_gap", x.ilp_gap);
    st.Set("ilp_optimal", static_cast<int64_t>(x.ilp_optimal ? 1 : 0));
  }
  if (x.reranked > 0) {
    // A context-dependent model: the extractions costed whole, and what the additive optimum
    // costs whole beside what was taken.
    count("reranked", x.reranked);
    st.Set("whole_cost_ms", x.whole_cost_ms);
    st.Set("additive_pick_whole_cost_ms", x.additive_pick_whole_cost_ms);
  }
  if (growth.mcts) count("mcts_simulations", growth.simulations);
  for (const auto& [name, value] : growth.extra.entries()) st.Set(name, value);
  result.summary.emplace_back(
      "e-graph",
      fmt::format("{} e-nodes in {} e-classes ({} blacklisted, ~{:.1f} MiB) built in {:.2f} s; {} "
                  "extraction in {:.2f} s{}{}",
                  nodes, classes, blacklisted, bytes / 1048576.0, build_seconds, x.kind, x.seconds,
                  note.empty() ? "" : ": ", note));
  if (limits.progress) {
    limits.progress(
        {result.iterations, rounds, result.final_cost_ms, result.initial_cost_ms, nodes});
  }
  result.seconds = SecondsSince(start);
  return Status::Ok();
}

/// Progress after each round of `rounds`: the e-graph's size (the cost is known at the end).
std::function<void(int, const EGraph&)> RoundProgress(const SearchLimits& limits, int rounds,
                                                      double initial) {
  return [&limits, rounds, initial](int it, const EGraph& eg) {
    if (limits.progress) limits.progress({it, rounds, initial, initial, eg.num_nodes()});
  };
}

/// The e-graph of `graph` grown by `grow` (saturation or tree search, given the start and the
/// per-round progress), then the cheapest graph extracted: both searches' Run.
template <typename Grow>
StatusOr<SearchResult> GrowAndExtract(const Graph& graph, const std::vector<Graph>& seeds,
                                      bool seeds_after_growth,
                                      const std::vector<rules::Rule>& rules, CostModel& cost,
                                      const EqsatOptions& eo, const SearchLimits& limits,
                                      int rounds, Grow&& grow) {
  const auto start = Clock::now();
  SearchResult result;
  REWIRE_ASSIGN_OR_RETURN(result.initial_cost_ms, GraphCostMs(cost, graph));
  static const std::vector<Graph> kNone;
  REWIRE_ASSIGN_OR_RETURN(
      Start s, StartEgraph(graph, seeds_after_growth ? kNone : seeds, rules, eo, limits, start));
  REWIRE_ASSIGN_OR_RETURN(const Growth growth,
                          grow(s, RoundProgress(limits, rounds, result.initial_cost_ms)));
  if (seeds_after_growth && !seeds.empty()) {
    for (const Graph& seed : seeds) REWIRE_RETURN_IF_ERROR(s.state.egraph.AddSeed(seed));
    if (eo.filter_cycles) FilterCycles(s.state.egraph);
  }
  REWIRE_RETURN_IF_ERROR(
      Finish(graph, seeds, s.state, cost, eo, growth, limits, rounds, start, result));
  return result;
}

}  // namespace

Status ValidateEqsatOptions(const EqsatOptions& o) {
  if (o.node_limit < 1) return InvalidArgument("the e-graph node limit must be at least 1");
  if (o.iteration_limit < 1) return InvalidArgument("the iteration limit must be at least 1");
  if (o.multi_iterations < 0)
    return InvalidArgument("the multi-pattern iterations must be at least 0");
  if (o.extraction != "greedy" && o.extraction != "ilp") {
    return InvalidArgument("unknown extraction '" + o.extraction + "' (known: greedy, ilp)");
  }
  if (!(o.ilp_time_limit_s > 0)) return InvalidArgument("the ILP time limit must be positive");
  if (o.mcts_simulations < 1) return InvalidArgument("MCTS needs at least 1 simulation");
  if (o.mcts_rollout_depth < 0) return InvalidArgument("the MCTS rollout depth must be >= 0");
  if (o.mcts_max_steps < 1) return InvalidArgument("MCTS needs at least 1 step");
  if (!(o.mcts_exploration >= 0)) return InvalidArgument("the UCT constant must be >= 0");
  return Status::Ok();
}

// ---------------------------------------------------------------------------- eqsat

void EqsatSearch::DeclareOptions(OptionSet& set) {
  DeclareEgraphOptions(set, options);
  set.Add("eqsat-iterations", &options.iteration_limit,
          "Rewriting iterations at most (match every rule, apply, rebuild)")
      .Above(0);
  set.Add("multi-iterations", &options.multi_iterations,
          "The first iterations in which multi-pattern rules (several source sinks, e.g. merging "
          "two ops that share an input) are applied too")
      .AtLeast(0);
}

Status EqsatSearch::Check(const SearchLimits&) const { return ValidateEqsatOptions(options); }

StatusOr<SearchResult> EqsatSearch::Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                                        CostModel& cost, const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  const int rounds = options.iteration_limit;
  return GrowAndExtract(
      graph, seeds, seeds_after_growth, rules, cost, options, limits, rounds,
      [&](Start& s, std::function<void(int, const EGraph&)> progress) -> StatusOr<Growth> {
        SaturationOptions so;
        so.round = s.round;
        so.iteration_limit = options.iteration_limit;
        so.multi_iterations = options.multi_iterations;
        so.progress = std::move(progress);
        REWIRE_ASSIGN_OR_RETURN(SaturationReport r, Saturate(s.state, s.erules, so));
        Growth g = GrowthOf(r, r.iterations);
        SetRulesApplied(g.extra, s.erules, r.applied_by_rule);
        return g;
      });
}

// ---------------------------------------------------------------------------- mcts-eqsat

void MctsEqsatSearch::DeclareOptions(OptionSet& set) {
  DeclareEgraphOptions(set, options);
  set.Add("mcts-simulations", &options.mcts_simulations,
          "Simulations (select, expand, roll out, score) per committed rule application")
      .Above(0);
  set.Add("mcts-rollout-depth", &options.mcts_rollout_depth,
          "Random rule applications in a rollout")
      .AtLeast(0);
  set.Add("mcts-exploration", &options.mcts_exploration,
          "UCT exploration constant (rewards are fractions of the input's cost)")
      .AtLeast(0);
  set.Add("mcts-steps", &options.mcts_max_steps, "Committed rule applications at most").Above(0);
}

Status MctsEqsatSearch::Check(const SearchLimits&) const { return ValidateEqsatOptions(options); }

StatusOr<SearchResult> MctsEqsatSearch::Run(const Graph& graph,
                                            const std::vector<rules::Rule>& rules, CostModel& cost,
                                            const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  const int rounds = options.mcts_max_steps;
  return GrowAndExtract(
      graph, seeds, seeds_after_growth, rules, cost, options, limits, rounds,
      [&](Start& s, std::function<void(int, const EGraph&)> progress) -> StatusOr<Growth> {
        MctsOptions mo;
        mo.round = s.round;
        mo.simulations = options.mcts_simulations;
        mo.rollout_depth = options.mcts_rollout_depth;
        mo.exploration = options.mcts_exploration;
        mo.max_steps = options.mcts_max_steps;
        mo.seed = limits.seed;
        mo.progress = std::move(progress);
        REWIRE_ASSIGN_OR_RETURN(MctsReport m, BuildWithMcts(s.state, s.erules, cost, mo));
        Growth g = GrowthOf(m, m.steps);
        g.mcts = true;
        g.simulations = m.simulations;
        return g;
      });
}

// ---------------------------------------------------------------------------- learned-eqsat

void LearnedEqsatSearch::DeclareOptions(OptionSet& set) {
  DeclareEgraphOptions(set, options);
  DeclareBuilderOptions(set);
}

void LearnedEqsatSearch::DeclareBuilderOptions(OptionSet& set) {
  set.Add("builder", &builder_path,
          "The trained e-graph builder (a checkpoint `rewire train-builder` writes; default: the "
          "shipped one, configs/builders/zoo.json)");
  set.Add("builder-steps", &max_steps,
          "Steps at most (each: the rules the policy includes, "
          "applied as one round)")
      .Above(0);
  set.Add("builder-samples", &samples,
          "E-graphs also built with sampled inclusions beside the deterministic one; the one "
          "whose greedy extraction is cheapest is extracted")
      .AtLeast(0);
  set.Add("builder-lookahead", &lookahead,
          "At each step also try the policy's choice with one of the K rules it is least sure "
          "of flipped, each on a copy of the e-graph, and keep the cheapest by greedy "
          "extraction; where the policy or the value would stop, go on only if a step lowers "
          "that score (0: the policy's choice alone)")
      .AtLeast(0);
  set.Add("builder-patience", &patience,
          "Stop after this many steps in a row that did not lower the greedy extraction's cost "
          "(0: never)")
      .AtLeast(0);
  set.Switch("builder-saturation-try", &saturation_try, true,
             "Where the value, the policy or patience would stop, first try one round of every "
             "rule with a new match on a copy, and go on from it where it lowers the greedy "
             "extraction's cost (spends the rest of the node limit; off: stop)");
  set.Add("builder-stop-margin", &stop_margin,
          "Stop when the value predicts less than this fraction of the input's cost still to "
          "save")
      .AtLeast(0);
}

Status LearnedEqsatSearch::Check(const SearchLimits&) const {
  std::error_code ec;
  if (!builder_path.empty() && !std::filesystem::is_regular_file(builder_path, ec)) {
    return InvalidArgument("--builder " + builder_path +
                           ": no such file (a checkpoint `rewire train-builder` writes)");
  }
  return ValidateEqsatOptions(options);
}

StatusOr<SearchResult> LearnedEqsatSearch::Run(const Graph& graph,
                                               const std::vector<rules::Rule>& rules,
                                               CostModel& cost, const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  const std::string path = builder_path.empty() ? ShippedBuilderPath() : builder_path;
  if (path != loaded_path_) {
    REWIRE_ASSIGN_OR_RETURN(policy_, LoadBuilderPolicy(path));
    loaded_path_ = path;
  }
  return GrowAndExtract(
      graph, seeds, seeds_after_growth, rules, cost, options, limits, max_steps,
      [&](Start& s, std::function<void(int, const EGraph&)> progress) -> StatusOr<Growth> {
        BuildOptions bo;
        bo.round = s.round;
        bo.max_steps = max_steps;
        bo.stop_margin = stop_margin;
        bo.lookahead = lookahead;
        bo.patience = patience;
        bo.saturation_try = saturation_try;
        bo.progress = std::move(progress);
        const RewriteState initial = samples > 0 ? s.state : RewriteState{};
        REWIRE_ASSIGN_OR_RETURN(BuildReport best,
                                BuildWithPolicy(s.state, s.erules, cost, policy_, bo));
        int picked = 0;
        for (int k = 1; k <= samples; ++k) {
          RewriteState state = initial;
          BuildOptions so = bo;
          so.sample = true;
          so.seed = limits.seed + static_cast<uint64_t>(k);
          so.progress = nullptr;
          REWIRE_ASSIGN_OR_RETURN(BuildReport r,
                                  BuildWithPolicy(state, s.erules, cost, policy_, so));
          if (r.final_score_ms < best.final_score_ms) {
            best = std::move(r);
            s.state = std::move(state);
            picked = k;
          }
        }
        Growth g = GrowthOf(best, best.steps);
        SetRulesApplied(g.extra, s.erules, best.applied_by_rule);
        g.extra.Set("builder_stop", std::string(BuildStopName(best.stop)));
        g.extra.Set("builder_steps", static_cast<int64_t>(best.steps));
        g.extra.Set("builder_score_ms", best.final_score_ms);
        if (lookahead > 0) {
          g.extra.Set("builder_lookahead_flips", static_cast<int64_t>(best.lookahead_flips));
        }
        if (saturation_try) {
          g.extra.Set("builder_saturation_steps", static_cast<int64_t>(best.saturation_steps));
        }
        if (samples > 0) {
          g.extra.Set("builder_pick", picked == 0 ? std::string("deterministic")
                                                  : "sample " + std::to_string(picked));
        }
        g.extra.Set("builder_trained_on", std::to_string(policy_.models.size()) + " graphs, " +
                                              std::to_string(policy_.epochs) + " epochs");
        return g;
      });
}

}  // namespace rewire::eqsat
