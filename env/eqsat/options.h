#pragma once
// Options of the equality-saturation searches (`rewire optimize --search eqsat|mcts-eqsat`),
// held by EqsatSearch and MctsEqsatSearch (env/eqsat/eqsat_search.h). docs/eqsat.md explains each.

#include <cstddef>
#include <string>

namespace rewire {

struct EqsatOptions {
  /// E-nodes the e-graph may hold: no rewrite is applied that could take it past this.
  size_t node_limit = 50000;
  /// Rewriting iterations at most (each: match every rule, apply, rebuild, filter cycles).
  int iteration_limit = 15;
  /// The first iterations in which multi-pattern rules (several source sinks, e.g. merging two
  /// operators that share an input) are matched too; Tensat's k_multi.
  int multi_iterations = 2;
  /// Blacklist e-nodes that close cycles (env/eqsat/cycles.h).
  bool filter_cycles = true;
  /// "greedy" (each class's cheapest e-node) or "ilp" (CBC, cycles cut off, the greedy result
  /// as the incumbent and the fallback).
  std::string extraction = "ilp";
  /// Seconds the ILP solver may take (the greedy result is kept when it finds nothing better).
  double ilp_time_limit_s = 1;
  /// Extractable e-nodes above which no ILP is built (greedy extraction, with a note).
  size_t ilp_max_nodes = 300000;
  /// Give the ILP solver the greedy extraction as its first solution.
  bool ilp_warm_start = true;
  /// Strengthen the ILP's relaxation with requirement rows first (env/eqsat/extract_ilp.cc).
  bool ilp_requirement_rows = true;

  // ---------------------------------------------------------------- mcts-eqsat
  /// Simulations (select, expand one rule application, roll out, score) per committed action.
  int mcts_simulations = 8;
  /// Random actions in a rollout after the tree's path.
  int mcts_rollout_depth = 1;
  /// UCT exploration constant (rewards are fractions of the input's cost).
  double mcts_exploration = 0.5;
  /// Committed actions at most.
  int mcts_max_steps = 20;
};

}  // namespace rewire
