// learner/'s agents, registered by name (learner/agent.h): one line each.

#include "learner/agent.h"
#include "learner/config.h"
#include "learner/ppo_agent.h"

namespace rewire {

void AddLearnerAgents(AgentRegistry& registry) {
  registry.Add(AgentRegistry::Entry{
      kPpoGnnAgent, "PPO over the GNN policy (X-RLflow)",
      [](const TrainConfig& c, uint64_t seed) -> StatusOr<std::unique_ptr<Agent>> {
        REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<PpoGnnAgent> a, PpoGnnAgent::Create(c, seed));
        return std::unique_ptr<Agent>(std::move(a));
      },
      LooksLikePolicyCheckpoint,
      [](const std::string& path) -> StatusOr<std::unique_ptr<Agent>> {
        REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<PpoGnnAgent> a, PpoGnnAgent::Load(path));
        return std::unique_ptr<Agent>(std::move(a));
      }});
}

}  // namespace rewire
