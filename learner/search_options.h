#pragma once
// The options of what a trained policy searches with (learner/agent.h): its rollouts (the `rl`
// search, learner/rl_search.h) and the guided beam search (learner/guided_search.h). No LibTorch.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "env/environment.h"
#include "env/search.h"

namespace rewire {

/// The rollouts of `--search rl` (learner/rl_search.h).
struct AgentSearchOptions {
  int horizon = 100;
  size_t max_candidates = 500;
  /// Sampled rollouts besides the greedy-policy one (the best graph of all is returned).
  int samples = 0;
  uint64_t seed = 0;
  /// The rollouts' actions (EnvOptions::actions); null: the rules' rewrites.
  std::shared_ptr<ActionSource> actions;
};

/// Policy-guided search (`rewire optimize --search guided`). First the policy's own rollout
/// (its most likely rewrite at each step), with `greedy_seed` the cost model's greedy descent,
/// and `samples` sampled rollouts give the incumbents, so the search ends no worse than any; then a
/// beam search starts from their best graphs with the rest of the budget, looking past where they
/// stopped. Each depth expands the beam: every beam graph's candidates are enumerated and scored by
/// the policy, its `expand` most likely rewrites and the cost model's cheapest one become children;
/// children are deduplicated by hash and scored by the estimated final cost, cost - value_weight *
/// value / 100 * RT_0 (the value head's return-to-go, in percent of the input's cost), one batched
/// forward for all of them; the `beam_width` best form the next beam. The cheapest graph seen is
/// the result. The search's budget counts graphs expanded (candidates enumerated and scored by the
/// policy; the rollouts' steps included): comparable with backtracking's budget of popped graphs;
/// the limits' seed draws the sampled rollouts, and progress is reported after every depth.
struct GuidedSearchOptions {
  int beam_width = 8;
  int expand = 4;
  /// The cost model's cheapest rewrites also tried from each beam graph.
  int cheapest = 4;
  /// Weight of the value's return-to-go in a child's score (0: children ranked by cost alone).
  double value_weight = 1.0;
  /// Depths without a cheaper graph before the search stops (saturated).
  int patience = 12;
  /// Also seed the beam with greedy search's result (its steps count against the budget): the
  /// policy's rollout and greedy descent end in different places, and the beam continues both.
  bool greedy_seed = true;
  /// Rollouts that sample the policy's actions, after the seeds above, each an incumbent and a
  /// seed of the beam (their steps count against the budget; each stops after `patience` steps
  /// without a cheaper graph): a policy whose most likely path falls short often samples a
  /// better one, and the search then ends no worse than the best of its rollouts.
  int samples = 0;
  int horizon = 100;  // depth at most
};

}  // namespace rewire
