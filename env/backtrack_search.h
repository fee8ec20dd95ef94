#pragma once
// `--search backtrack`: TASO's search. A priority queue of graphs by cost; every candidate of the
// popped graph costing less than alpha x the best cost is queued (once: graphs are deduplicated
// by hash); graphs whose running operators (not leaves, not weight-only: those are folded) grow
// past max_growth x the input's are skipped. The budget counts popped graphs. Reports the stat
// "dropped": queued graphs dropped to keep the queue under max_queue. With --advantage-top K only
// the K candidates of each popped graph a ranker (env/candidate_ranker.h) puts first are costed.

#include <cstddef>

#include "env/candidate_ranker.h"
#include "env/search.h"

namespace rewire {

struct BacktrackOptions {
  /// Queue candidates costing less than alpha x the best cost (TASO uses 1.05).
  double alpha = 1.05;
  /// Skip graphs running more than max_growth x the input's operators (weight-only operators,
  /// which folding removes, do not count).
  double max_growth = 1.5;
  /// Graphs kept in the queue at most; past it the costliest are dropped (each entry holds a
  /// graph copy and its cost table, so this bounds memory).
  size_t max_queue = 2000;
};

class BacktrackSearch : public Search {
 public:
  BacktrackOptions options;
  RankingOptions ranking;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

}  // namespace rewire
