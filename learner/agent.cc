#include "learner/agent.h"

#include <filesystem>

namespace rewire {

void AgentRegistry::Add(Entry entry) {
  for (Entry& e : entries_) {
    if (e.name == entry.name) {
      e = std::move(entry);
      return;
    }
  }
  entries_.push_back(std::move(entry));
}

const AgentRegistry::Entry* AgentRegistry::Find(const std::string& name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

bool AgentRegistry::Has(const std::string& name) const { return Find(name) != nullptr; }

std::vector<std::string> AgentRegistry::Names() const {
  std::vector<std::string> names;
  for (const Entry& e : entries_) names.push_back(e.name);
  return names;
}

namespace {
std::string KnownList(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}
}  // namespace

StatusOr<std::unique_ptr<Agent>> AgentRegistry::Create(const std::string& name,
                                                       const TrainConfig& config,
                                                       uint64_t seed) const {
  const Entry* e = Find(name);
  if (!e)
    return InvalidArgument("unknown agent '" + name + "' (known: " + KnownList(Names()) + ")");
  return e->create(config, seed);
}

StatusOr<std::unique_ptr<Agent>> AgentRegistry::Load(const std::string& path) const {
  if (!std::filesystem::is_regular_file(path)) return NotFound("checkpoint " + path + " not found");
  for (const Entry& e : entries_) {
    if (e.recognises(path)) return e.load(path);
  }
  return InvalidArgument(path + " is not a rewire policy checkpoint (none of the agents " +
                         KnownList(Names()) + " wrote it)");
}

AgentRegistry& Agents() {
  static AgentRegistry registry = [] {
    AgentRegistry r;
    AddLearnerAgents(r);
    return r;
  }();
  return registry;
}

}  // namespace rewire
