#pragma once
// The non-learned searches over rewrites, on the same rules and cost model as the RL agent:
// they are the baselines it must beat.
//
//   greedy     apply the best improving rewrite until none improves (or the budget runs out)
//   backtrack  TASO's search: a priority queue of graphs by cost; every candidate of the popped
//              graph costing less than alpha x best is queued (once: graphs are deduplicated by
//              hash); graphs whose running operators (not leaves, not weight-only: those are
//              folded) grow past max_growth x the input's are skipped
//   random     random walks of rewrites from the input graph, keeping the best graph seen
//   eqsat      equality saturation (Tensat): every rule applied in an e-graph, then the cheapest
//              graph extracted from it, greedily or by an ILP (env/eqsat/, docs/eqsat.md)
//   mcts-eqsat the e-graph built by Monte Carlo tree search over rule applications under the
//              node limit (MCTS-GEB), then extracted as eqsat's
//
// Stopping is data, not an error: a search returns why it stopped with its statistics.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "env/eqsat/options.h"
#include "graph/graph.h"
#include "graph/rules/matcher.h"
#include "graph/rules/rule.h"
#include "kernels/cost_model.h"

namespace rewire {

enum class StopReason {
  kSaturated,       // no candidate improves (greedy) / the queue ran dry (backtrack) / no rule
                    // changes the e-graph (eqsat)
  kBudget,          // the budget of explored graphs ran out
  kTimeLimit,       // the wall-clock limit ran out
  kNodeLimit,       // eqsat: the e-graph reached its node limit
  kIterationLimit,  // eqsat: the iteration limit ran out
};
const char* StopReasonName(StopReason r);

struct SearchProgress {
  int iteration = 0;
  int budget = 0;
  double best_cost_ms = 0;
  double initial_cost_ms = 0;
  size_t queue_size = 0;
};

struct SearchOptions {
  std::string algorithm = "backtrack";  // greedy | backtrack | random | eqsat | mcts-eqsat
  /// Graphs explored at most: greedy steps, backtrack pops, random rewrites.
  int budget = 100;
  /// backtrack: queue candidates costing less than alpha x the best cost (TASO uses 1.05).
  double alpha = 1.05;
  /// backtrack: skip graphs running more than max_growth x the input's operators (weight-only
  /// operators, which folding removes, do not count).
  double max_growth = 1.5;
  /// backtrack: graphs kept in the queue at most; past it the costliest are dropped (each entry
  /// holds a graph copy and its cost table, so this bounds memory).
  size_t max_queue = 2000;
  /// random: rewrites per walk before starting again from the input graph.
  int walk_length = 20;
  uint64_t seed = 0;
  size_t max_candidates = 500;
  /// 0: none. eqsat and mcts-eqsat: the limit of building the e-graph (the ILP has its own).
  double time_limit_s = 0;
  /// eqsat, mcts-eqsat: the e-graph's limits, the extraction, the tree search.
  EqsatOptions eqsat;
  /// Called after every iteration (e.g. to print progress); may be empty.
  std::function<void(const SearchProgress&)> progress;
};

struct SearchStep {
  std::string rule;
  double cost_ms = 0;  // cost of the graph after this rewrite
  /// The match applied (`match.rule` indexes the search's rules), so that ReplaySteps can
  /// rebuild the graphs along the path; match.rule is -1 where a search does not record it (the
  /// agent's searches).
  rules::Match match;
};

/// What the equality-saturation searches report besides the common fields (empty for others).
struct EqsatStats {
  size_t egraph_nodes = 0;       // live e-nodes when extraction began
  size_t egraph_classes = 0;     // e-classes then
  size_t blacklisted = 0;        // e-nodes cycle filtering blacklisted
  size_t memory_bytes = 0;       // the e-graph's own estimate of its size
  size_t matches = 0;            // new matches found
  size_t cycle_skips = 0;        // multi-pattern matches skipped as they would close a cycle
  std::string extraction;        // what produced the graph: greedy | ilp
  std::string note;              // the ILP's status, a fallback's reason, or the input kept
  double extracted_cost_ms = 0;  // the extraction's objective (the graph's cost before folding)
  double greedy_cost_ms = 0;     // the greedy extraction's
  double incumbent_cost_ms = 0;  // ilp: the solver's start (greedy improved by local search)
  double build_seconds = 0;      // saturation or tree search
  double extract_seconds = 0;    // costing e-nodes, greedy, ILP, building the graph
  double ilp_seconds = 0;
  size_t ilp_variables = 0, ilp_constraints = 0;  // of the ILP solved (0 when none)
  size_t mcts_simulations = 0;                    // mcts-eqsat
};

struct SearchResult {
  Graph best;
  double initial_cost_ms = 0;
  double final_cost_ms = 0;
  std::vector<SearchStep> steps;  // rewrites from the input graph to `best`
  StopReason reason = StopReason::kSaturated;
  int iterations = 0;
  int64_t candidates_evaluated = 0;
  int64_t dropped = 0;  // backtrack: queued graphs dropped to keep the queue under max_queue
  double seconds = 0;
  /// Figures a search reports besides these, by name (the rl search: the cheapest graph of its
  /// greedy-policy rollout and of its samples); reports list them as they are.
  std::map<std::string, double> stats;
  EqsatStats eqsat;  // eqsat, mcts-eqsat (their `steps` are empty: extraction yields a graph)
};

/// The graph after the first k rewrites of `steps` from `input`, for each k of `prefixes`, by
/// replaying the recorded matches on `input` with `rules` (the search's own): the graph after
/// all of RunSearch's steps is its `best`, node for node. Errors: a k beyond the steps, a step
/// that recorded no match, a match that no longer applies (other rules or another input).
StatusOr<std::vector<Graph>> ReplaySteps(const Graph& input, const std::vector<rules::Rule>& rules,
                                         const std::vector<SearchStep>& steps,
                                         const std::vector<size_t>& prefixes);

/// Up to `count` prefix lengths of a path of `n` rewrites, spread evenly and longest first:
/// n, then shorter ones down to about n / count; never 0 (the input itself). Empty for n = 0.
std::vector<size_t> SpreadPrefixes(size_t n, int count);

/// The algorithm names RunSearch accepts.
const std::vector<std::string>& SearchAlgorithms();

/// Runs a search from `graph`. Errors: an unknown algorithm, a budget below 1, alpha below 1, an
/// eqsat option out of range, or a cost model that cannot cost an operator of the graph.
StatusOr<SearchResult> RunSearch(const Graph& graph, const std::vector<rules::Rule>& rules,
                                 CostModel& cost, const SearchOptions& options);

}  // namespace rewire
