#pragma once
// The searches that run a trained policy, for the optimise pipeline (pipeline/optimize.h):
//   rl      the policy's rollouts: its most likely rewrite at each step, then `samples` sampled
//           rollouts; the cheapest graph of all (Agent::Optimize)
//   guided  the beam search the policy proposes for and its value scores (Agent::GuidedSearch)
// Each loads the request's checkpoint. No LibTorch in this header.

#include "pipeline/search_registry.h"

namespace rewire {

/// Adds `rl` and `guided` (both need a policy checkpoint) to `searches`. The rl search reports
/// the cheapest graph of its greedy-policy rollout and of its samples as the SearchResult stats
/// "greedy_policy_cost_ms" and "sampled_best_cost_ms".
void AddAgentSearches(SearchRegistry& searches);

/// A registry with the non-learned searches and the agent's: what `rewire optimize` offers.
SearchRegistry AllSearches();

}  // namespace rewire
