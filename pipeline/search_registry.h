#pragma once
// The searches the optimise pipeline can run, by name. A registry starts with the non-learned
// searches of env/search.h; a library adds its own (learner/agent_searches.h adds the trained
// policy's `rl` and `guided`, which need LibTorch: the pipeline itself never links them).

#include <functional>
#include <string>
#include <vector>

#include "env/search.h"
#include "graph/graph.h"
#include "graph/rules/rule.h"
#include "kernels/cost_model.h"

namespace rewire {

struct OptimizeRequest;  // pipeline/optimize.h

/// One search: from `input`, with `rules` under `cost`, as `request` asks. The result's `best`
/// is the graph found; its `steps` may be empty where a search records no path.
using SearchFunction =
    std::function<StatusOr<SearchResult>(const Graph& input, const std::vector<rules::Rule>& rules,
                                         CostModel& cost, const OptimizeRequest& request)>;

class SearchRegistry {
 public:
  /// The non-learned searches: every name of SearchAlgorithms(), run by RunSearch.
  SearchRegistry();

  /// Adds `name` (replacing a search of that name). `needs_policy`: the search runs a trained
  /// policy, so a request for it must name a checkpoint (and one for any other must not).
  void Add(const std::string& name, SearchFunction run, bool needs_policy);

  bool Has(const std::string& name) const;
  bool NeedsPolicy(const std::string& name) const;
  /// Every name, in the order added.
  std::vector<std::string> Names() const;

  /// Runs search `name`. Errors: an unknown name (listing the known ones), and the search's own.
  StatusOr<SearchResult> Run(const std::string& name, const Graph& input,
                             const std::vector<rules::Rule>& rules, CostModel& cost,
                             const OptimizeRequest& request) const;

 private:
  struct Entry {
    std::string name;
    SearchFunction run;
    bool needs_policy = false;
  };
  const Entry* Find(const std::string& name) const;
  std::vector<Entry> entries_;
};

}  // namespace rewire
