#include "learner/agent.h"

#include <filesystem>

namespace rewire {

StatusOr<std::unique_ptr<Agent>> AgentRegistry::Create(const std::string& name,
                                                       const TrainConfig& config,
                                                       uint64_t seed) const {
  REWIRE_ASSIGN_OR_RETURN(const Entry* e, entries_.Get(name));
  return e->create(config, seed);
}

StatusOr<std::unique_ptr<Agent>> AgentRegistry::Load(const std::string& path) const {
  if (!std::filesystem::is_regular_file(path)) return NotFound("checkpoint " + path + " not found");
  for (const Entry& e : entries_.entries()) {
    if (e.recognises(path)) return e.load(path);
  }
  return InvalidArgument(path + " is not a rewire policy checkpoint (none of the agents " +
                         entries_.List() + " wrote it)");
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
