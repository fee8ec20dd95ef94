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
  set.Add("grow", &grow,
          "What grows the seeded e-graph: saturate (eqsat) or learned (a trained e-graph "
          "builder, --builder, by default the shipped one; eqsat's iteration options then do "
          "not apply)")
      .OneOf({"saturate", "learned"});
  learned.DeclareBuilderOptions(set);
}

Status RlEqsatSearch::Check(const SearchLimits& limits) const {
  REWIRE_RETURN_IF_ERROR(CheckPolicyOption("rl-eqsat", rl.policy));
  REWIRE_RETURN_IF_ERROR(eqsat.Check(limits));
  if (grow == "learned") return learned.Check(limits);
  if (!learned.builder_path.empty()) {
    return InvalidArgument("--builder is for rl-eqsat --grow learned (this run saturates)");
  }
  return Status::Ok();
}

StatusOr<SearchResult> RlEqsatSearch::Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                                          CostModel& cost, const SearchLimits& limits) {
  REWIRE_RETURN_IF_ERROR(Check(limits));
  const auto start = Clock::now();
  REWIRE_ASSIGN_OR_RETURN(SearchResult rolled, rl.Run(graph, rules, cost, limits));
  // A rollout that found nothing cheaper than the input adds nothing the e-graph lacks.
  const bool seeded = rolled.final_cost_ms < rolled.initial_cost_ms;
  std::vector<Graph> seeds;
  if (seeded) seeds.push_back(rolled.best);
  SearchLimits rest = limits;
  if (limits.time_limit_s > 0) {
    rest.time_limit_s = std::max(limits.time_limit_s - rolled.seconds, 1e-3);
  }
  auto grown = [&](auto& search) -> StatusOr<SearchResult> {
    search.seeds = std::move(seeds);
    search.seeds_after_growth = seed_at == "end";
    StatusOr<SearchResult> r = search.Run(graph, rules, cost, rest);
    search.seeds.clear();
    return r;
  };
  StatusOr<SearchResult> ran = [&] {
    if (grow != "learned") return grown(eqsat);
    learned.options = eqsat.options;
    return grown(learned);
  }();
  REWIRE_ASSIGN_OR_RETURN(SearchResult result, std::move(ran));
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
