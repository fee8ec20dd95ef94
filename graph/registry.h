#pragma once
// Components by name: the table behind each of rewire's registries (searches, cost models,
// agents). An entry is any struct with a `name` and a one-line `summary`; the registry keeps them
// in the order added, replaces an entry added again under its name, and says what is known when
// a name is not.

#include <string>
#include <utility>
#include <vector>

#include "graph/status.h"

namespace rewire {

template <typename Entry>
class NamedRegistry {
 public:
  /// `what` names an entry in messages: "search", "cost model", "agent".
  explicit NamedRegistry(std::string what) : what_(std::move(what)) {}

  /// Adds `entry`, replacing one of its name (in place, keeping the order).
  void Add(Entry entry) {
    for (Entry& e : entries_) {
      if (e.name == entry.name) {
        e = std::move(entry);
        return;
      }
    }
    entries_.push_back(std::move(entry));
  }

  /// The entry of `name`, or null.
  const Entry* Find(const std::string& name) const {
    for (const Entry& e : entries_) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }
  /// The entry of `name`. Errors: InvalidArgument "unknown WHAT 'name' (known: a, b)".
  StatusOr<const Entry*> Get(const std::string& name) const {
    const Entry* e = Find(name);
    if (!e) return InvalidArgument("unknown " + what_ + " '" + name + "' (known: " + List() + ")");
    return e;
  }
  bool Has(const std::string& name) const { return Find(name) != nullptr; }
  /// Every name, in the order added.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const Entry& e : entries_) names.push_back(e.name);
    return names;
  }
  /// The names as "a, b, c".
  std::string List() const {
    std::string list;
    for (const Entry& e : entries_) list += (list.empty() ? "" : ", ") + e.name;
    return list;
  }
  /// The summary of `name` (empty for an unknown name).
  std::string Summary(const std::string& name) const {
    const Entry* e = Find(name);
    return e ? e->summary : "";
  }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::string what_;
  std::vector<Entry> entries_;
};

}  // namespace rewire
