#include "learner/optimize.h"

#include <algorithm>
#include <memory>

namespace rewire {

StatusOr<OptimizeOutcome> OptimizeGraph(const Graph& input, const std::vector<rules::Rule>& rules,
                                        CostModel& cost, const OptimizeRequest& request) {
  const SearchOptions& search = request.search;
  const std::vector<std::string>& agent_searches = AgentSearchAlgorithms();
  const bool agent_search = std::find(agent_searches.begin(), agent_searches.end(),
                                      search.algorithm) != agent_searches.end();
  if (agent_search && request.policy.empty()) {
    return InvalidArgument("the " + search.algorithm +
                           " search needs a policy checkpoint (from `rewire train`)");
  }
  if (!agent_search && !request.policy.empty()) {
    return InvalidArgument("a policy applies to the rl and guided searches only, not to " +
                           search.algorithm);
  }
  OptimizeOutcome out;
  if (search.algorithm == "rl") {
    REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent, Agent::Load(request.policy));
    AgentSearchOptions ao = request.agent;
    ao.max_candidates = search.max_candidates;
    ao.seed = search.seed;
    REWIRE_ASSIGN_OR_RETURN(AgentSearchResult found, agent->Optimize(input, rules, cost, ao));
    out.search = std::move(found.best);
  } else if (search.algorithm == "guided") {
    REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Agent> agent, Agent::Load(request.policy));
    GuidedSearchOptions go = request.guided;
    go.budget = search.budget;
    go.time_limit_s = search.time_limit_s;
    go.horizon = request.agent.horizon;
    go.max_candidates = search.max_candidates;
    go.progress = search.progress;
    REWIRE_ASSIGN_OR_RETURN(out.search, agent->GuidedSearch(input, rules, cost, go));
  } else {
    REWIRE_ASSIGN_OR_RETURN(out.search, RunSearch(input, rules, cost, search));
  }
  REWIRE_ASSIGN_OR_RETURN(out.result,
                          FinishSearch(input, std::move(out.search.best), cost, request.finish));
  return out;
}

}  // namespace rewire
