#pragma once
// `--search rl-eqsat`: a trained agent's rollouts (as `--search rl`), then equality saturation
// with the cheapest of them as a seed (env/eqsat/eqsat_search.h EqsatSearch::seeds). With
// `--seed-at end` (the default) the rollout joins the e-graph once it has grown, before
// extraction: growth is unseeded eqsat's and extraction chooses among both, so the result is
// at least as cheap as the rollout and, but for extraction's own limits, as eqsat's. With
// `--seed-at start` saturation starts from where the policy went as well as from the input
// (rewrites that raise the cost before they pay); on xrlflow-bert that made the e-graph
// saturate smaller (15.9k e-nodes against 38.7k) and lose eqsat's result. Every eqsat option
// applies. With `--grow learned` the e-graph is grown by a trained e-graph builder (`--builder`,
// by default the shipped one; learned-eqsat's options) instead of saturation: the learned builder
// starts where the policy went. Reports eqsat's (or learned-eqsat's) stats and rl_cost_ms (the
// rollouts' best), rl_seconds. No LibTorch in this header.

#include <string>
#include <vector>

#include "env/eqsat/eqsat_search.h"
#include "learner/rl_search.h"

namespace rewire {

class RlEqsatSearch : public Search {
 public:
  RlSearch rl;               // --policy, --samples, --horizon
  eqsat::EqsatSearch eqsat;  // the e-graph's options
  /// `--grow learned`: the builder (its --builder options; the e-graph options are eqsat's).
  eqsat::LearnedEqsatSearch learned;
  /// "saturate": eqsat grows the e-graph; "learned": the trained builder does.
  std::string grow = "saturate";
  /// "start": the rollout is added before the e-graph grows; "end": once it has grown, before
  /// extraction (EqsatSearch::seeds_after_growth).
  std::string seed_at = "end";

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

}  // namespace rewire
