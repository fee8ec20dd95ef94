#pragma once
// The searches by name. A registry maps a name to a factory of Search instances (env/search.h);
// the optimise pipeline and the CLI take searches from one and know none by name. Searches()
// is the process's registry: it starts with env/'s searches (AddEnvSearches), and layers above
// add their own (learner/agent_searches.h adds the agent's `rl` and `guided`).

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "env/search.h"
#include "graph/registry.h"

namespace rewire {

class SearchRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Search>()>;

  /// Adds search `name` (replacing one of that name): `summary` is its one-line description
  /// (`rewire optimize --help` lists it), `make` builds an instance with default options.
  void Add(const std::string& name, const std::string& summary, Factory make);
  /// Add for a default-constructible Search class.
  template <typename S>
  void Add(const std::string& name, const std::string& summary) {
    Add(name, summary, [] { return std::unique_ptr<Search>(new S()); });
  }

  bool Has(const std::string& name) const { return entries_.Has(name); }
  /// Every name, in the order added.
  std::vector<std::string> Names() const { return entries_.Names(); }
  /// The summary of `name` (empty for an unknown name).
  std::string Summary(const std::string& name) const { return entries_.Summary(name); }

  /// A new instance of search `name` with its default options. Errors: an unknown name (listing
  /// the known ones).
  StatusOr<std::unique_ptr<Search>> Make(const std::string& name) const;
  /// Make, then sets its options by name from text (OptionSet::SetAll). Errors: Make's, and an
  /// option the search does not declare or a value it does not take.
  StatusOr<std::unique_ptr<Search>> Make(
      const std::string& name,
      const std::vector<std::pair<std::string, std::string>>& options) const;

 private:
  struct Entry {
    std::string name;
    std::string summary;
    Factory make;
  };
  NamedRegistry<Entry> entries_{"search"};
};

/// Adds env/'s searches: greedy, backtrack, random, eqsat, mcts-eqsat, advantage, passes,
/// pass-beam, pass-random.
void AddEnvSearches(SearchRegistry& registry);

/// The process's registry, with env/'s searches from the first call on. Not thread-safe to
/// change: add searches at start-up, before searches run on other threads.
SearchRegistry& Searches();

/// Runs search `name` of Searches() with its options set from text: a shorthand for code and
/// tests that run one search directly.
StatusOr<SearchResult> RunSearch(
    const std::string& name, const Graph& graph, const std::vector<rules::Rule>& rules,
    CostModel& cost, const SearchLimits& limits,
    const std::vector<std::pair<std::string, std::string>>& options = {});

}  // namespace rewire
