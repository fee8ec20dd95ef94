#pragma once
// `--search rl`: a trained agent's rollouts on the input - one taking its most likely action at
// each step, then `--samples` sampled ones (drawn by the search seed) - and the cheapest graph of
// all. Reports the stats greedy_policy_cost_ms and, with samples, sampled_best_cost_ms. No
// LibTorch in this header.

#include <string>
#include <vector>

#include "env/search.h"
#include "learner/agent.h"
#include "learner/search_options.h"

namespace rewire {

/// What an agent's rollouts found.
struct RolloutsResult {
  SearchResult best;                 // the cheapest graph over all rollouts, with its rewrites
  double greedy_policy_cost_ms = 0;  // cheapest graph of the greedy-policy rollout
  double sampled_best_cost_ms = 0;   // cheapest over the sampled rollouts (0 without samples)
};

/// Rollouts of `agent` on `graph`: one greedy (most likely action each step), then
/// `options.samples` sampled ones drawn from options.seed; each rollout's best graph (not only
/// its last) counts.
StatusOr<RolloutsResult> PlayRollouts(Agent& agent, const Graph& graph,
                                      const std::vector<rules::Rule>& rules, CostModel& cost,
                                      const AgentSearchOptions& options);

class RlSearch : public Search {
 public:
  /// The checkpoint to load (from `rewire train`); required.
  std::string policy;
  /// Sampled rollouts besides the greedy-policy one.
  int samples = 0;
  /// Steps per rollout at most.
  int horizon = 100;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

/// Checks a policy search's checkpoint option: given.
Status CheckPolicyOption(const std::string& search, const std::string& policy);

}  // namespace rewire
