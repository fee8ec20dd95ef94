// Single-process training: a LearnerRank collecting its own episodes, one PPO update at a time.

#include "learner/trainer.h"

#include <chrono>
#include <memory>

#include "graph/clock.h"
#include "learner/training.h"

namespace rewire {

Status Train(const TrainConfig& c, const RunPaths& paths, bool resume,
             const std::function<void(const std::string&)>& log) {
  REWIRE_ASSIGN_OR_RETURN(
      std::unique_ptr<LearnerRank> learner,
      LearnerRank::Create(c, paths, resume ? ResumeMode::kResume : ResumeMode::kFresh, log));
  while (!learner->finished()) {
    // --- rollouts: whole episodes, one model sampled per episode
    const auto start = Clock::now();
    REWIRE_ASSIGN_OR_RETURN(std::vector<Episode> episodes,
                            learner->CollectEpisodes(c.ppo.episodes_per_update));
    const double rollout_s = SecondsSince(start);
    // --- advantages, the PPO epochs, metrics and checkpoint
    REWIRE_RETURN_IF_ERROR(learner->Update(std::move(episodes), rollout_s));
  }
  return Status::Ok();
}

}  // namespace rewire
