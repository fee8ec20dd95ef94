#include "pipeline/search_registry.h"

#include "pipeline/optimize.h"

namespace rewire {

SearchRegistry::SearchRegistry() {
  for (const std::string& name : SearchAlgorithms()) {
    Add(
        name,
        [](const Graph& input, const std::vector<rules::Rule>& rules, CostModel& cost,
           const OptimizeRequest& request) {
          return RunSearch(input, rules, cost, request.search);
        },
        /*needs_policy=*/false);
  }
}

void SearchRegistry::Add(const std::string& name, SearchFunction run, bool needs_policy) {
  for (Entry& e : entries_) {
    if (e.name == name) {
      e.run = std::move(run);
      e.needs_policy = needs_policy;
      return;
    }
  }
  entries_.push_back(Entry{name, std::move(run), needs_policy});
}

const SearchRegistry::Entry* SearchRegistry::Find(const std::string& name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

bool SearchRegistry::Has(const std::string& name) const { return Find(name) != nullptr; }

bool SearchRegistry::NeedsPolicy(const std::string& name) const {
  const Entry* e = Find(name);
  return e && e->needs_policy;
}

std::vector<std::string> SearchRegistry::Names() const {
  std::vector<std::string> names;
  for (const Entry& e : entries_) names.push_back(e.name);
  return names;
}

StatusOr<SearchResult> SearchRegistry::Run(const std::string& name, const Graph& input,
                                           const std::vector<rules::Rule>& rules, CostModel& cost,
                                           const OptimizeRequest& request) const {
  const Entry* e = Find(name);
  if (!e) {
    std::string known;
    for (const Entry& k : entries_) known += (known.empty() ? "" : ", ") + k.name;
    return InvalidArgument("unknown search '" + name + "' (known: " + known + ")");
  }
  return e->run(input, rules, cost, request);
}

}  // namespace rewire
