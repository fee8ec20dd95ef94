#include "env/search_registry.h"

#include "env/backtrack_search.h"
#include "env/eqsat/eqsat_search.h"
#include "env/greedy_search.h"
#include "env/random_search.h"

namespace rewire {

void SearchRegistry::Add(const std::string& name, const std::string& summary, Factory make) {
  for (Entry& e : entries_) {
    if (e.name == name) {
      e.summary = summary;
      e.make = std::move(make);
      return;
    }
  }
  entries_.push_back(Entry{name, summary, std::move(make)});
}

const SearchRegistry::Entry* SearchRegistry::Find(const std::string& name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

bool SearchRegistry::Has(const std::string& name) const { return Find(name) != nullptr; }

std::vector<std::string> SearchRegistry::Names() const {
  std::vector<std::string> names;
  for (const Entry& e : entries_) names.push_back(e.name);
  return names;
}

std::string SearchRegistry::Summary(const std::string& name) const {
  const Entry* e = Find(name);
  return e ? e->summary : "";
}

StatusOr<std::unique_ptr<Search>> SearchRegistry::Make(const std::string& name) const {
  const Entry* e = Find(name);
  if (!e) {
    std::string known;
    for (const Entry& k : entries_) known += (known.empty() ? "" : ", ") + k.name;
    return InvalidArgument("unknown search '" + name + "' (known: " + known + ")");
  }
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
