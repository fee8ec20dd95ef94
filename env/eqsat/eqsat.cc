#include "env/eqsat/eqsat.h"

#include <algorithm>

#include "env/eqsat/cycles.h"
#include "env/eqsat/extract.h"
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

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
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

StatusOr<SearchResult> RunEqsatSearch(const Graph& graph, const std::vector<rules::Rule>& rules,
                                      CostModel& cost, const SearchOptions& o) {
  REWIRE_RETURN_IF_ERROR(ValidateEqsatOptions(o.eqsat));
  const EqsatOptions& eo = o.eqsat;
  const auto start = Clock::now();
  SearchResult result;
  REWIRE_ASSIGN_OR_RETURN(result.initial_cost_ms, GraphCostMs(cost, graph));
  REWIRE_ASSIGN_OR_RETURN(EGraph egraph, EGraph::FromGraph(graph));
  RewriteState state{std::move(egraph), {}};
  std::vector<ERule> erules;
  erules.reserve(rules.size());
  for (size_t i = 0; i < rules.size(); ++i) erules.emplace_back(rules[i], static_cast<int>(i));
  RoundOptions round;
  round.node_limit = eo.node_limit;
  round.filter_cycles = eo.filter_cycles;
  if (o.time_limit_s > 0) {
    round.deadline = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(o.time_limit_s));
  }
  if (eo.filter_cycles) FilterCycles(state.egraph);
  const double initial = result.initial_cost_ms;
  const int rounds = o.algorithm == "mcts-eqsat" ? eo.mcts_max_steps : eo.iteration_limit;
  auto progress = [&](int it, const EGraph& eg) {
    if (o.progress) o.progress({it, rounds, initial, initial, eg.num_nodes()});
  };
  EqsatStats& st = result.eqsat;
  if (o.algorithm == "mcts-eqsat") {
    MctsOptions mo;
    mo.round = round;
    mo.simulations = eo.mcts_simulations;
    mo.rollout_depth = eo.mcts_rollout_depth;
    mo.exploration = eo.mcts_exploration;
    mo.max_steps = eo.mcts_max_steps;
    mo.seed = o.seed;
    mo.progress = progress;
    REWIRE_ASSIGN_OR_RETURN(MctsReport m, BuildWithMcts(state, erules, cost, mo));
    result.reason = ToStopReason(m.stop);
    result.iterations = m.steps;
    result.candidates_evaluated = static_cast<int64_t>(m.applied);
    st.matches = m.matches;
    st.cycle_skips = m.cycle_skips;
    st.mcts_simulations = m.simulations;
  } else {
    SaturationOptions so;
    so.round = round;
    so.iteration_limit = eo.iteration_limit;
    so.multi_iterations = eo.multi_iterations;
    so.progress = progress;
    REWIRE_ASSIGN_OR_RETURN(SaturationReport r, Saturate(state, erules, so));
    result.reason = ToStopReason(r.stop);
    result.iterations = r.iterations;
    result.candidates_evaluated = static_cast<int64_t>(r.applied);
    st.matches = r.matches;
    st.cycle_skips = r.cycle_skips;
  }
  st.build_seconds = Since(start);
  const EGraph& eg = state.egraph;
  st.egraph_nodes = eg.num_nodes();
  st.egraph_classes = eg.num_classes();
  st.blacklisted = eg.num_blacklisted();
  st.memory_bytes = eg.MemoryBytes();

  ExtractOptions xo;
  xo.kind = eo.extraction;
  xo.ilp = {eo.ilp_time_limit_s, eo.ilp_max_nodes, eo.ilp_warm_start};
  REWIRE_ASSIGN_OR_RETURN(Extraction x, Extract(state.egraph, cost, xo));
  st.extraction = x.kind;
  st.note = x.note;
  st.extracted_cost_ms = x.cost_ms;
  st.greedy_cost_ms = x.greedy_cost_ms;
  st.incumbent_cost_ms = x.incumbent_cost_ms;
  st.extract_seconds = x.seconds;
  st.ilp_seconds = x.ilp_seconds;
  st.ilp_variables = x.ilp_variables;
  st.ilp_constraints = x.ilp_constraints;
  REWIRE_ASSIGN_OR_RETURN(result.final_cost_ms, GraphCostMs(cost, x.graph));
  if (result.final_cost_ms > result.initial_cost_ms) {
    st.note += std::string(st.note.empty() ? "" : "; ") + "the extracted graph costs more than " +
               "the input: the input is kept";
    result.best = graph;
    result.final_cost_ms = result.initial_cost_ms;
  } else {
    result.best = std::move(x.graph);
  }
  if (o.progress) {
    o.progress({result.iterations, rounds, result.final_cost_ms, initial, st.egraph_nodes});
  }
  result.seconds = Since(start);
  return result;
}

}  // namespace rewire::eqsat
