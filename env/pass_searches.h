#pragma once
// The searches over passes (env/passes.h):
//
//   passes       a pipeline run in order (`--passes fold,fusion,merge`; the default pipeline
//                when none is given): the fast, predictable option a compiler's -O2 is
//   pass-beam    the best pass sequence of at most --depth passes: every sequence (exhaustive,
//                the default) or the --width cheapest graphs at each depth (beam); the bound a
//                learned order is judged against
//   pass-random  --sequences random orders of the pipeline's passes; the best is the result,
//                the median is reported (median_cost_ms) as the baseline of any order
//
// Each pass runs to a fixed point under the search's cost model (`--cost operators` counts
// operators, the pass-ordering metric). A pass's result depends only on the graph, so the
// searches share results by structural hash (PassCache): sequences that meet at one graph are
// expanded once. Their steps are the passes that changed the graph (the rewrites inside a pass
// are not recorded one by one, so the path is not replayed: the result is judged alone).
// learner/ adds `--policy` to `passes`: the order a trained agent chooses (learner/pass_search.h).

#include <string>
#include <vector>

#include "env/passes.h"
#include "env/search.h"

namespace rewire {

/// Options every pass search shares.
struct PassSearchOptions {
  int max_rewrites = 10000;  // rewrites one rule pass may apply at most
  void Declare(OptionSet& set);
  PassOptions pass_options(const SearchLimits& limits) const;
};

class PassSearch : public Search {
 public:
  /// The pipeline: pass names separated by commas, "default" or "all".
  std::string passes = "default";
  PassSearchOptions common;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

class PassBeamSearch : public Search {
 public:
  /// The passes to order (pipeline syntax; a name listed twice counts once).
  std::string passes = "all";
  int depth = 4;  // passes per sequence at most
  int width = 0;  // graphs kept per depth; 0: all (exhaustive)
  PassSearchOptions common;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

class PassRandomSearch : public Search {
 public:
  /// The pipeline whose passes are shuffled (pipeline syntax).
  std::string passes = "default";
  int sequences = 20;
  PassSearchOptions common;

  void DeclareOptions(OptionSet& set) override;
  Status Check(const SearchLimits& limits) const override;
  StatusOr<SearchResult> Run(const Graph& graph, const std::vector<rules::Rule>& rules,
                             CostModel& cost, const SearchLimits& limits) override;
};

/// The SearchResult of running `pipeline` from `graph` through `cache`: the final graph, a step
/// per pass that changed it (its cost after), the operator counts in the summary and stats.
StatusOr<SearchResult> RunPipelineSearch(const Graph& graph, PassCache& cache,
                                         const std::vector<int>& pipeline);

}  // namespace rewire
