// learner/'s agents, registered by name (learner/agent.h): one line each.

#include "learner/agent.h"
#include "learner/config.h"
#include "learner/policy.h"
#include "learner/ppo_agent.h"
#include "learner/world_model_agent.h"

namespace rewire {

void AddLearnerAgents(AgentRegistry& registry) {
  registry.Add(AgentRegistry::Entry{
      kPpoGnnAgent, "PPO over the GNN policy (X-RLflow)",
      [](const TrainConfig& c, uint64_t seed) -> StatusOr<std::unique_ptr<Agent>> {
        REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<PpoGnnAgent> a, PpoGnnAgent::Create(c, seed));
        return std::unique_ptr<Agent>(std::move(a));
      },
      [](const std::string& path) {
        // A policy checkpoint of another agent names it; one that cannot be read is left to
        // ppo-gnn's loader, whose error says why.
        if (!LooksLikePolicyCheckpoint(path)) return false;
        const std::string agent = CheckpointAgent(path);
        return agent.empty() || agent == kPpoGnnAgent;
      },
      [](const std::string& path) -> StatusOr<std::unique_ptr<Agent>> {
        REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<PpoGnnAgent> a, PpoGnnAgent::Load(path));
        return std::unique_ptr<Agent>(std::move(a));
      }});
  registry.Add(AgentRegistry::Entry{
      kWorldModelAgent,
      "RLFlow's world-model agent: PPO on rollouts imagined on the real matcher, rewarded by a "
      "learned model",
      [](const TrainConfig& c, uint64_t seed) -> StatusOr<std::unique_ptr<Agent>> {
        REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<WorldModelAgent> a,
                                WorldModelAgent::Create(c, seed));
        return std::unique_ptr<Agent>(std::move(a));
      },
      [](const std::string& path) { return CheckpointAgent(path) == kWorldModelAgent; },
      [](const std::string& path) -> StatusOr<std::unique_ptr<Agent>> {
        REWIRE_ASSIGN_OR_RETURN(std::unique_ptr<WorldModelAgent> a, WorldModelAgent::Load(path));
        return std::unique_ptr<Agent>(std::move(a));
      }});
}

}  // namespace rewire
