#pragma once
// `--search passes` with a trained agent: `--policy P` orders the passes (the agent chose the
// next pass at each step in training, env.actions = "passes"), its most likely pass each step
// until it stops, and with `--samples N` N sampled orders more, the best of all kept (a search
// over the policy's likely sequences at inference, cheap because pass results are shared by
// structural hash). Without --policy it is env/'s pipeline search. No LibTorch in this header.

#include <string>
#include <vector>

#include "env/pass_searches.h"

namespace rewire {

class PolicyPassSearch : public PassSearch {
 public:
  /// A checkpoint of an agent trained on pass actions; empty: run the --passes pipeline.
  std::string policy;
  int samples = 0;   // sampled orders besides the most likely one
  int horizon = 16;  // passes per order at most

  void DeclareOptions(OptionSet& set) override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

}  // namespace rewire
