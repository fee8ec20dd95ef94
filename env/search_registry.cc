#include "env/search_registry.h"

#include "env/advantage_search.h"
#include "env/backtrack_search.h"
#include "env/eqsat/eqsat_search.h"
#include "env/greedy_search.h"
#include "env/pass_searches.h"
#include "env/random_search.h"

namespace rewire {

void SearchRegistry::Add(const std::string& name, const std::string& summary, Factory make) {
  entries_.Add(Entry{name, summary, std::move(make)});
}

StatusOr<std::unique_ptr<Search>> SearchRegistry::Make(const std::string& name) const {
  REWIRE_ASSIGN_OR_RETURN(const Entry* e, entries_.Get(name));
  return e->make();
}

StatusOr<std::unique_ptr<Search>> SearchRegistry::Make(
    const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& options) const {
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Search> search, Make(name));
  OptionSet set;
  search->DeclareOptions(set);
  REWIRE_RETURN_IF_ERROR(set.SetAll(options).WithContext("search " + name));
  return search;
}

void AddEnvSearches(SearchRegistry& registry) {
  registry.Add<GreedySearch>("greedy", "apply the cheapest improving rewrite until none improves");
  registry.Add<BacktrackSearch>(
      "backtrack",
      "TASO's search: a priority queue of graphs by cost, explored up to alpha x best");
  registry.Add<RandomSearch>("random", "random walks of rewrites, keeping the best graph seen");
  registry.Add<eqsat::EqsatSearch>(
      "eqsat", "equality saturation: every rule applied in an e-graph, then extraction");
  registry.Add<eqsat::MctsEqsatSearch>(
      "mcts-eqsat", "the e-graph built by Monte Carlo tree search, then extraction");
  registry.Add<eqsat::LearnedEqsatSearch>(
      "learned-eqsat",
      "the e-graph built by a trained policy (rewire train-builder), then "
      "extraction");
  registry.Add<AdvantageSearch>(
      "advantage",
      "progressive search: cost one of the best-ranked untried candidates (--ranker), keep it if "
      "cheaper");
  registry.Add<PassSearch>("passes",
                           "a pipeline of passes, each run to a fixed point (--passes a,b,c; "
                           "--policy: the order a trained agent chooses)");
  registry.Add<PassBeamSearch>(
      "pass-beam", "the best sequence of passes up to --depth: exhaustive, or a beam (--width)");
  registry.Add<PassRandomSearch>(
      "pass-random", "random orders of the pipeline's passes: the best, and the median");
}

SearchRegistry& Searches() {
  static SearchRegistry registry = [] {
    SearchRegistry r;
    AddEnvSearches(r);
    return r;
  }();
  return registry;
}

StatusOr<SearchResult> RunSearch(const std::string& name, const Graph& graph,
                                 const std::vector<rules::Rule>& rules, CostModel& cost,
                                 const SearchLimits& limits,
                                 const std::vector<std::pair<std::string, std::string>>& options) {
  REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<Search> search, Searches().Make(name, options));
  return search->Run(graph, rules, cost, limits);
}

}  // namespace rewire
