#pragma once
// The policy-guided search (`rewire optimize --search guided`, GuidedSearchOptions in
// pipeline/policy_search_options.h): the policy's rollout and greedy search seed a beam whose
// expansions the policy proposes and whose graphs half its value scores and half the cost alone.
// LibTorch: include only from learner/*.cc and tests.

#include <vector>

#include "env/search.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "kernels/cost_model.h"
#include "learner/policy.h"
#include "pipeline/policy_search_options.h"

namespace rewire {

/// Runs the guided search with `policy`. Errors: a budget, beam width, expansion count, horizon
/// or patience below 1, a negative value weight, cheapest count or time limit, a graph the cost
/// model cannot cost. Stopping is data (the result's reason); the result's stats say where the
/// budget went and which part found what: rollout_steps, rollout_cost_ms, greedy_steps,
/// greedy_cost_ms, beam_depths, beam_expansions, beam_improvements_valued,
/// beam_improvements_cost (improvements found below a beam graph the value ranked in, or the cost
/// alone ranked in), value_distrusted_depths (depths at which the value, having found fewer
/// improvements per expansion than the cost alone, ranked one beam graph only).
StatusOr<SearchResult> RunGuidedSearch(GnnPolicy& policy, const Graph& graph,
                                       const std::vector<rules::Rule>& rules, CostModel& cost,
                                       const GuidedSearchOptions& options);

}  // namespace rewire
