#pragma once
// `--search greedy`: apply the cheapest improving rewrite until none improves, the budget of
// steps runs out or the time limit does. With --advantage-top K it costs only the K candidates of
// each graph a ranker (env/candidate_ranker.h) puts first, and takes the cheapest improving one
// of those.

#include "env/candidate_ranker.h"
#include "env/search.h"

namespace rewire {

class GreedySearch : public Search {
 public:
  RankingOptions ranking;
  /// Per rule: 0 leaves it out (a pass applies the rules of one class, env/passes.h); empty:
  /// every rule. Not an option of the command line.
  std::vector<uint8_t> rules_enabled;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

}  // namespace rewire
