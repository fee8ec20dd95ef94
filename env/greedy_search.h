#pragma once
// `--search greedy`: apply the cheapest improving rewrite until none improves, the budget of
// steps runs out or the time limit does. No options of its own.

#include "env/search.h"

namespace rewire {

class GreedySearch : public Search {
 public:
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

}  // namespace rewire
