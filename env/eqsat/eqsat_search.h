#pragma once
// The equality-saturation searches: build the e-graph of the input graph, grow it, extract the
// cheapest graph. docs/eqsat.md describes the design and every option.
//
//   eqsat       `--search eqsat`: every rule applied in rounds until saturation or a limit
//               (Tensat)
//   mcts-eqsat  `--search mcts-eqsat`: rule applications chosen by Monte Carlo tree search under
//               the node limit (MCTS-GEB)
//   learned-eqsat `--search learned-eqsat`: the rules each step applies chosen by a trained
//               policy, a value deciding when to stop (env/eqsat/learned_builder.h)
//
// All record no sequence of rewrites (the result's path_note says why) and report these stats:
// egraph_nodes, egraph_classes, blacklisted, memory_bytes (the e-graph when extraction began),
// matches, cycle_skips, extraction (greedy | ilp), note (the ILP's status, a fallback's reason,
// or the input kept), extracted_cost_ms, greedy_cost_ms, incumbent_cost_ms, build_seconds,
// extract_seconds, ilp_seconds, ilp_variables, ilp_constraints, ilp_bound_ms, ilp_gap and
// ilp_optimal (when the ILP returned a solution), mcts_simulations (mcts-eqsat),
// seeds (with seeds), rules_applied (eqsat, learned-eqsat: the rules applied most), and reranked,
// whole_cost_ms, additive_pick_whole_cost_ms (under a context-dependent cost: env/eqsat/extract.h
// ExtractOptions::rerank_whole). The result's `iterations` are saturation rounds (eqsat) or
// committed rule applications (mcts-eqsat), `candidates_evaluated` the matches applied. When the
// extracted graph costs more than the input (greedy extraction can), the input is returned with a
// note.

#include <string>
#include <vector>

#include "env/eqsat/learned_builder.h"
#include "env/eqsat/options.h"
#include "env/search.h"

namespace rewire::eqsat {

/// Checks the eqsat options: positive limits, a known extraction, MCTS settings in range.
Status ValidateEqsatOptions(const EqsatOptions& options);

class EqsatSearch : public Search {
 public:
  EqsatOptions options;
  /// Graphs other searches reached from the input, added to the e-graph before it grows
  /// (EGraph::AddSeed); a seed cheaper than the extraction is returned instead. Set by a search
  /// that runs eqsat after its own (rl-eqsat), not an option.
  std::vector<Graph> seeds;
  /// The seeds are added once the e-graph has grown, just before extraction (the growth is
  /// then the unseeded one's, and the node limit may be passed by the seeds' e-nodes), instead
  /// of before it grows.
  bool seeds_after_growth = false;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

class MctsEqsatSearch : public Search {
 public:
  EqsatOptions options;
  std::vector<Graph> seeds;  // as EqsatSearch's
  bool seeds_after_growth = false;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

/// `--search learned-eqsat`: the e-graph grown by a trained builder (env/eqsat/learned_builder.h),
/// then extracted as eqsat's. Reports eqsat's stats and builder_stop, builder_steps,
/// builder_score_ms, builder_pick (with samples), builder_lookahead_flips (with lookahead),
/// builder_trained_on, rules_applied.
class LearnedEqsatSearch : public Search {
 public:
  EqsatOptions options;
  std::string builder_path;  // empty: ShippedBuilderPath()
  int max_steps = 15;
  int samples = 0;
  int lookahead = 2;
  int patience = 2;
  bool saturation_try = false;
  double stop_margin = 0.002;
  std::vector<Graph> seeds;  // as EqsatSearch's
  bool seeds_after_growth = false;

  void DeclareOptions(OptionSet& set) override;
  /// The builder's own options only (--builder, --builder-*), for a search that holds the
  /// e-graph options elsewhere (rl-eqsat --grow learned).
  void DeclareBuilderOptions(OptionSet& set);
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;

 private:
  std::string loaded_path_;
  BuilderPolicy policy_;
};

}  // namespace rewire::eqsat
