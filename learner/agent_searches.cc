#include "learner/agent_searches.h"

#include <memory>

#include "learner/agent.h"
#include "pipeline/optimize.h"

namespace rewire {
namespace {

StatusOr<SearchResult> RunRollouts(const Graph& input, const std::vector<rules::Rule>& rules,
                                   CostModel& cost, const OptimizeRequest& request) {
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent, Agent::Load(request.policy));
  AgentSearchOptions ao = request.agent;
  ao.max_candidates = request.search.max_candidates;
  ao.seed = request.search.seed;
  REWIRE_ASSIGN_OR_RETURN(AgentSearchResult found, agent->Optimize(input, rules, cost, ao));
  found.best.stats["greedy_policy_cost_ms"] = found.greedy_policy_cost_ms;
  if (ao.samples > 0) found.best.stats["sampled_best_cost_ms"] = found.sampled_best_cost_ms;
  return std::move(found.best);
}

StatusOr<SearchResult> RunGuided(const Graph& input, const std::vector<rules::Rule>& rules,
                                 CostModel& cost, const OptimizeRequest& request) {
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent, Agent::Load(request.policy));
  GuidedSearchOptions go = request.guided;
  go.budget = request.search.budget;
  go.time_limit_s = request.search.time_limit_s;
  go.horizon = request.agent.horizon;
  go.max_candidates = request.search.max_candidates;
  go.samples = request.agent.samples;
  go.seed = request.search.seed;
  go.progress = request.search.progress;
  return agent->GuidedSearch(input, rules, cost, go);
}

}  // namespace

void AddAgentSearches(SearchRegistry& searches) {
  searches.Add("rl", RunRollouts, /*needs_policy=*/true);
  searches.Add("guided", RunGuided, /*needs_policy=*/true);
}

SearchRegistry AllSearches() {
  SearchRegistry searches;
  AddAgentSearches(searches);
  return searches;
}

}  // namespace rewire
