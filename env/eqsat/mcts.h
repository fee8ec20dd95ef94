#pragma once
// MCTS-GEB (He, Singh, Yoneki, EuroMLSys'23): when a node limit stops saturation early, which
// rewrites get into the e-graph depends on the order they are applied in, and the phase-ordering
// problem is back. Monte Carlo tree search chooses that order.
//
// A state is an e-graph; an action is one saturation round restricted to one class of rules
// (Rule::rule_class: fusion, merge, layout, algebraic, ...; MCTS-GEB's actions are single rules,
// too many here with 300 rules) or a round of every rule; multi-pattern rules are in their class
// at any step, not only in the first rounds. The tree's edges are actions. A simulation selects
// a path by UCT, expands one untried action, rolls out `rollout_depth` random actions and scores
// the e-graph it reaches by extraction (the cheaper greedy extraction improved by local search,
// env/eqsat/extract.h: the ILP's starting point, fast), rewarding the fraction of the input's
// cost saved. After `simulations` simulations the action whose subtree scored best
// is committed (the tree below it is kept), until the node limit, `max_steps` commits, no action
// changing anything, or the time limit. Every state respects the node limit, so the search
// compares e-graphs of the same budget. The e-graph returned is the best-scoring one seen.
// Tree nodes keep their e-graph, so memory grows with simulations x e-graph size.

#include <cstdint>
#include <functional>
#include <vector>

#include "cost/cost_model.h"
#include "env/eqsat/saturate.h"

namespace rewire::eqsat {

struct MctsOptions {
  RoundOptions round;  // node limit, cycle filtering, deadline
  int simulations = 8;
  int rollout_depth = 1;
  double exploration = 0.5;
  int max_steps = 20;
  uint64_t seed = 0;
  /// Called after every committed action with its number (from 1) and the e-graph.
  std::function<void(int, const EGraph&)> progress;
};

struct MctsReport {
  SaturationStop stop = SaturationStop::kSaturated;
  int steps = 0;  // committed actions
  size_t simulations = 0;
  size_t matches = 0, applied = 0, cycle_skips = 0;  // of the committed actions
  double best_score_ms = 0;  // greedy extraction cost of the e-graph returned
  double seconds = 0;
};

/// Grows `state` by tree search; on return it holds the best-scoring e-graph seen. Errors: a
/// rewrite or costing failed.
StatusOr<MctsReport> BuildWithMcts(RewriteState& state, const std::vector<ERule>& rules,
                                   CostModel& cost, const MctsOptions& options);

/// The score of an e-graph: the cost of the cheaper of its two greedy extractions improved by
/// local search (costs its e-nodes first). Errors: costing failed, no extraction.
StatusOr<double> GreedyScore(EGraph& egraph, CostModel& cost);

}  // namespace rewire::eqsat
