#pragma once
// `--search random`: random walks of rewrites from the input graph (each `walk_length` rewrites
// long, drawn by the search seed), keeping the cheapest graph seen. The budget counts rewrites.

#include "env/search.h"

namespace rewire {

struct RandomSearchOptions {
  /// Rewrites per walk before starting again from the input graph.
  int walk_length = 20;
};

class RandomSearch : public Search {
 public:
  RandomSearchOptions options;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

}  // namespace rewire
