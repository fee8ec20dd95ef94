#include "learner/agent_searches.h"

#include <mutex>

#include "learner/guided_search.h"
#include "learner/pass_search.h"
#include "learner/rl_eqsat_search.h"
#include "learner/rl_search.h"

namespace rewire {

void AddAgentSearches(SearchRegistry& searches) {
  searches.Add<RlSearch>("rl", "a trained agent's rollouts, the cheapest graph of all (--policy)");
  searches.Add<GuidedSearch>("guided",
                             "beam search guided by a trained agent's policy and value (--policy)");
  searches.Add<RlEqsatSearch>("rl-eqsat",
                              "equality saturation seeded with a trained agent's cheapest "
                              "rollout (--policy; every eqsat option)");
  searches.Add<PolicyPassSearch>("passes",
                                 "a pipeline of passes, each run to a fixed point (--passes a,b,c; "
                                 "--policy: the order a trained agent chooses)");
}

SearchRegistry& AllSearches() {
  static std::once_flag added;
  std::call_once(added, [] { AddAgentSearches(Searches()); });
  return Searches();
}

}  // namespace rewire
