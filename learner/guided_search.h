#pragma once
// `--search guided`: the policy-guided beam search (GuidedSearchOptions in
// learner/search_options.h). The agent's rollout and greedy search seed a beam whose expansions
// the agent's policy proposes and whose graphs half its value scores and half the cost alone.
// No LibTorch in this header.

#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "env/search.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "learner/agent.h"
#include "learner/search_options.h"

namespace rewire {

/// Runs the guided search with `agent` under `limits` (its budget counts expanded graphs). Errors:
/// a budget, beam width, expansion count, horizon or patience below 1, a negative value weight,
/// cheapest count or time limit, a graph the cost model cannot cost. Stopping is data (the result's
/// reason); the result's stats say where the budget went and which part found what: rollout_steps,
/// rollout_cost_ms, greedy_steps, greedy_cost_ms, beam_depths, beam_expansions,
/// beam_improvements_valued, beam_improvements_cost (improvements found below a beam graph the
/// value ranked in, or the cost alone ranked in), value_distrusted_depths (depths at which the
/// value, having found fewer improvements per expansion than the cost alone, ranked one beam graph
/// only).
StatusOr<SearchResult> RunGuidedSearch(Agent& agent, const Graph& graph,
                                       const std::vector<rules::Rule>& rules, CostModel& cost,
                                       const GuidedSearchOptions& options,
                                       const SearchLimits& limits);

/// The guided search as a Search: loads the agent of --policy and runs RunGuidedSearch with the
/// pipeline's budget, time limit, seed and candidate cap.
class GuidedSearch : public Search {
 public:
  /// The checkpoint to load (from `rewire train`); required.
  std::string policy;
  /// Its own options (budget, time limit, seed, candidate cap and progress are the limits').
  GuidedSearchOptions options;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

}  // namespace rewire
