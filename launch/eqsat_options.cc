#include "launch/eqsat_options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "graph/json.h"

namespace rewire::cli {

void AddEqsatOptions(CLI::App& cmd, EqsatOptions& o) {
  cmd.add_option("--egraph-nodes", o.node_limit,
                 "eqsat, mcts-eqsat: e-nodes the e-graph may hold; no rewrite is applied that "
                 "could take it past this")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--eqsat-iterations", o.iteration_limit,
                 "eqsat: rewriting iterations at most (match every rule, apply, rebuild)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--multi-iterations", o.multi_iterations,
                 "eqsat: the first iterations in which multi-pattern rules (several source "
                 "sinks, e.g. merging two ops that share an input) are applied too")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd.add_flag(
      "--no-cycle-filter", [&o](int64_t) { o.filter_cycles = false; },
      "eqsat, mcts-eqsat: keep e-nodes that close cycles (the ILP's ordering "
      "constraints still keep the extracted graph acyclic)");
  cmd.add_option("--extract", o.extraction,
                 "eqsat, mcts-eqsat: greedy (each e-class's cheapest e-node) or ilp (CBC, with "
                 "the greedy result as its start and fallback)")
      ->capture_default_str()
      ->check(CLI::IsMember({"greedy", "ilp"}));
  cmd.add_option("--ilp-time-limit", o.ilp_time_limit_s,
                 "eqsat, mcts-eqsat: seconds the ILP solver may take")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--ilp-max-nodes", o.ilp_max_nodes,
                 "eqsat, mcts-eqsat: extractable e-nodes above which no ILP is built (greedy "
                 "extraction is used, with a note)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_flag(
      "--ilp-no-warm-start", [&o](int64_t) { o.ilp_warm_start = false; },
      "eqsat, mcts-eqsat: do not give the ILP solver the greedy extraction as its first "
      "solution");
  cmd.add_option("--mcts-simulations", o.mcts_simulations,
                 "mcts-eqsat: simulations (select, expand, roll out, score) per committed rule "
                 "application")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--mcts-rollout-depth", o.mcts_rollout_depth,
                 "mcts-eqsat: random rule applications in a rollout")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--mcts-exploration", o.mcts_exploration,
                 "mcts-eqsat: UCT exploration constant (rewards are fractions of the input's "
                 "cost)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--mcts-steps", o.mcts_max_steps,
                 "mcts-eqsat: committed rule applications at most")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

std::string EqsatSummary(const SearchResult& r) {
  const EqsatStats& s = r.eqsat;
  if (s.extraction.empty()) return "";
  return fmt::format(
      "{} e-nodes in {} e-classes ({} blacklisted, ~{:.1f} MiB) built in {:.2f} s; {} extraction "
      "in {:.2f} s{}{}",
      s.egraph_nodes, s.egraph_classes, s.blacklisted, s.memory_bytes / 1048576.0, s.build_seconds,
      s.extraction, s.extract_seconds, s.note.empty() ? "" : ": ", s.note);
}

}  // namespace rewire::cli
