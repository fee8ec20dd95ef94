#include "learner/rl_eqsat_search.h"

#include <fmt/format.h>

#include <algorithm>

#include "graph/clock.h"

namespace rewire {

void RlEqsatSearch::DeclareOptions(OptionSet& set) {
  rl.DeclareOptions(set);
  eqsat.DeclareOptions(set);
  set.Add("seed-at", &seed_at,
          "When the rollout enters the e-graph: start (before it grows) or end (before "
          "extraction)")
      .OneOf({"start", "end"});
}

Status RlEqsatSearch::Check(const SearchLimits& limits) const {
  REWIRE_RETURN_IF_ERROR(CheckPolicyOption("rl-eqsat", rl.policy));
  return eqsat.Check(limits);
}

StatusOr<SearchResult> RlEqsatSearch::Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                                          CostModel& cost, const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  const auto start = Clock::now();
  REWIRE_ASSIGN_OR_RETURN(SearchResult rolled, rl.Run(graph, rules, cost, limits));
  eqsat.seeds.clear();
  eqsat.seeds_after_growth = seed_at == "end";
  // A rollout that found nothing cheaper than the input adds nothing the e-graph lacks.
  const bool seeded = rolled.final_cost_ms < rolled.initial_cost_ms;
  if (seeded) eqsat.seeds.push_back(rolled.best);
  SearchLimits rest = limits;
  if (limits.time_limit_s > 0) {
    rest.time_limit_s = std::max(limits.time_limit_s - rolled.seconds, 1e-3);
  }
  REWIRE_ASSIGN_OR_RETURN(SearchResult result, eqsat.Run(graph, rules, cost, rest));
  eqsat.seeds.clear();
  result.stats.Set("rl_cost_ms", rolled.final_cost_ms);
  result.stats.Set("rl_seconds", rolled.seconds);
  result.stats.Set("greedy_policy_cost_ms", rolled.stats.Number("greedy_policy_cost_ms"));
  result.summary.insert(
      result.summary.begin(),
      {"policy",
       fmt::format("rollouts reached {:.3f}x in {:.2f} s ({} steps); the e-graph is "
                   "seeded with {}",
                   rolled.initial_cost_ms / rolled.final_cost_ms, rolled.seconds, rolled.iterations,
                   seeded ? "their cheapest graph"
                          : "nothing (they found nothing cheaper than the input)")});
  result.seconds = SecondsSince(start);
  return result;
}

}  // namespace rewire
