#pragma once
// A trained policy as a search: load a checkpoint, run greedy-policy and sampled rollouts on a
// graph, keep the cheapest graph seen. No LibTorch in this header (the CLI includes it).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "env/search.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "kernels/cost_model.h"
#include "learner/config.h"

namespace rewire {

struct AgentSearchOptions {
  int horizon = 100;
  size_t max_candidates = 500;
  /// Sampled rollouts besides the greedy-policy one (the best graph of all is returned).
  int samples = 0;
  uint64_t seed = 0;
};

/// Policy-guided search (`rewire optimize --search guided`). First the policy's own rollout
/// (its most likely rewrite at each step) and, with `greedy_seed`, the cost model's greedy
/// descent give the incumbents, so the search ends no worse than either; then a beam search
/// starts from their best graphs with the rest of the budget, looking past where they stopped. Each
/// depth expands the beam: every beam graph's candidates are enumerated and scored by the policy,
/// its `expand` most likely rewrites and the cost model's cheapest one become children; children
/// are deduplicated by hash and scored by the estimated final cost, cost - value_weight * value /
/// 100 * RT_0 (the value head's return-to-go, in percent of the input's cost), one batched forward
/// for all of them; the `beam_width` best form the next beam. The cheapest graph seen is the
/// result.
struct GuidedSearchOptions {
  int beam_width = 8;
  int expand = 4;
  /// The cost model's cheapest rewrites also tried from each beam graph.
  int cheapest = 4;
  /// Graphs expanded (candidates enumerated and scored by the policy; the rollout's steps
  /// included) at most: comparable with backtracking's budget of popped graphs.
  int budget = 400;
  double time_limit_s = 0;  // 0: none
  /// Weight of the value's return-to-go in a child's score (0: children ranked by cost alone).
  double value_weight = 1.0;
  /// Depths without a cheaper graph before the search stops (saturated).
  int patience = 12;
  /// Also seed the beam with greedy search's result (its steps count against the budget): the
  /// policy's rollout and greedy descent end in different places, and the beam continues both.
  bool greedy_seed = true;
  int horizon = 100;  // depth at most
  size_t max_candidates = 500;
  /// Called after every depth (may be empty).
  std::function<void(const SearchProgress&)> progress;
};

/// The names `rewire optimize --search` accepts for the agent: "rl" (rollouts) and "guided".
const std::vector<std::string>& AgentSearchAlgorithms();

/// What an agent's rollouts found, by kind.
struct AgentSearchResult {
  SearchResult best;                 // the cheapest graph over all rollouts, with its rewrites
  double greedy_policy_cost_ms = 0;  // cheapest graph of the greedy-policy rollout
  double sampled_best_cost_ms = 0;   // cheapest over the sampled rollouts (0 without samples)
};

class Agent {
 public:
  ~Agent();
  /// Loads a policy checkpoint. Errors (one line, naming the path): a missing file, a file that
  /// is not a rewire checkpoint, or - when `expected` is given - a checkpoint whose GNN shape
  /// differs from it ("checkpoint X has gnn.hidden = 64, the config asks for 32").
  static StatusOr<std::unique_ptr<Agent>> Load(const std::string& path,
                                               const GnnSection* expected = nullptr);

  int64_t policy_version() const;
  GnnSection gnn() const;

  /// Rollouts of the policy on `graph`: one greedy (most likely action each step), then
  /// `samples` sampled ones; each rollout's best graph (not only its last) counts.
  StatusOr<AgentSearchResult> Optimize(const Graph& graph, const std::vector<rules::Rule>& rules,
                                       CostModel& cost, const AgentSearchOptions& options);

  /// Beam search guided by the policy and the value (GuidedSearchOptions). Errors: a budget,
  /// beam width, expansion count or horizon below 1, a negative value weight or time limit, or
  /// a cost model that cannot cost the graph. Stopping is data: the result's reason says whether
  /// the budget, the time limit or `patience` depths without progress ended it.
  StatusOr<SearchResult> GuidedSearch(const Graph& graph, const std::vector<rules::Rule>& rules,
                                      CostModel& cost, const GuidedSearchOptions& options);

  struct Impl;

 private:
  explicit Agent(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rewire
