#pragma once
// `rewire optimize` as a library call: one search (non-learned, or a trained policy's), then
// env/finish.h (fold, cost, verify, predictions, ONNX). No LibTorch in this header.

#include <string>
#include <vector>

#include "env/finish.h"
#include "env/search.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "kernels/cost_model.h"
#include "learner/agent.h"

namespace rewire {

struct OptimizeRequest {
  /// The search: `algorithm` is one of SearchAlgorithms() or AgentSearchAlgorithms(). Its
  /// budget, time limit, seed, candidate cap and progress callback apply to the agent's
  /// searches too (guided: budget and time limit; rl: seed).
  SearchOptions search;
  /// rl, guided: the policy checkpoint (from `rewire train`); must be empty for the others.
  std::string policy;
  /// rl: sampled rollouts; rl and guided: horizon.
  AgentSearchOptions agent;
  /// guided: beam width, expansions, value weight, patience.
  GuidedSearchOptions guided;
  FinishOptions finish;
};

struct OptimizeOutcome {
  /// The search's statistics and rewrites (its graph moved into `result.graph`).
  SearchResult search;
  FinishedGraph result;
};

/// Optimises `input` with `rules` under `cost`: runs the requested search, then FinishSearch.
/// Errors: an unknown algorithm, a policy missing for (or given to) a search that needs (or
/// takes) none, a checkpoint that cannot be loaded, and the errors of the search and of
/// FinishSearch. A result that does not verify is data (result.equivalence), not an error.
StatusOr<OptimizeOutcome> OptimizeGraph(const Graph& input, const std::vector<rules::Rule>& rules,
                                        CostModel& cost, const OptimizeRequest& request);

}  // namespace rewire
