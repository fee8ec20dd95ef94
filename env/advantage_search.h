#pragma once
// `--search advantage`: the guided progressive search of "Learning Local Advantage Functions for
// Generalizable Graph Optimizations" (Wu et al.; docs/advantage.md, "Searches"). From the input
// graph, repeatedly: rank the current graph's candidates without costing them (--ranker, from
// --advantage-model), draw one at random among the best-ranked --top-fraction of those not yet
// tried there, cost it - one evaluation - and move to it when it is cheaper, else mark it tried.
// It stops when every candidate of the current graph has been tried (a local optimum: saturated),
// or when the budget of evaluations or the time runs out.
//
// With --ranker uniform it is its own unguided twin: the candidate is drawn uniformly among the
// untried ones. The budget counts evaluations (costed candidates).

#include "env/candidate_ranker.h"
#include "env/search.h"

namespace rewire {

struct AdvantageSearchOptions {
  /// The fraction of the untried candidates, best-ranked first, that a draw picks among (at
  /// least one candidate): the paper's alpha.
  double top_fraction = 0.1;
};

class AdvantageSearch : public Search {
 public:
  RankingOptions ranking;
  AdvantageSearchOptions options;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

}  // namespace rewire
