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
#include "pipeline/policy_search_options.h"

namespace rewire {

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
