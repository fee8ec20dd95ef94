#pragma once
// The world-model agent (run.agent = "world-model"; docs/rl.md, "The world-model agent"):
// RLFlow's idea - learn the environment, train the controller mostly in imagination - made to
// save real measurements. It acts like ppo-gnn (the controller is the GNN policy, reading
// gnn-features), so env actors, the acting loop, the searches and the weights broadcast to actors
// are the same. Each update it
//   1. scores the new real episodes with its world model before training on them (the
//      model's quality on held-out episodes: world/* metrics),
//   2. keeps them (the newest world_model.replay_episodes, each state with its chosen rewrite
//      only) and trains the world model (learner/world_model.h) on them,
//   3. makes a PPO update on the real episodes (world_model.real_ppo),
//   4. imagines world_model.imagined_episodes episodes (learner/imagination.h: branching from real
//      states, on the real matcher, nothing measured), rewards every imagined step with the
//      model (bootstrapping a cut episode from the controller's value) and makes a PPO update on
//      them.
// Its checkpoint is the policy's (so `--search rl --policy` acts with the controller) plus the
// world model, both optimisers and the imagination counts; its replay is the learner's episode
// history (replay/history.h), handed back on resume (Remember). LibTorch: include only from
// learner/*.cc and tests; others make it by name (Agents().Create("world-model", ...)).

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "learner/agent.h"
#include "learner/config.h"
#include "learner/policy.h"
#include "learner/world_model.h"

namespace rewire {

inline constexpr const char* kWorldModelAgent = "world-model";

class WorldModelAgent : public Agent {
 public:
  /// A fresh controller of config.gnn's shape and a world model of the same shape, weights drawn
  /// from `seed`; Adam for each ([ppo] and [world_model]).
  static StatusOr<std::unique_ptr<WorldModelAgent>> Create(const TrainConfig& config,
                                                           uint64_t seed);
  /// The agent in checkpoint `path`, for acting (Learn is an error). Errors: LoadCheckpoint's.
  static StatusOr<std::unique_ptr<WorldModelAgent>> Load(const std::string& path);

  std::string Name() const override { return kWorldModelAgent; }
  ObservationFormat observation_format() const override;
  StatusOr<std::vector<ActionScores>> Score(
      const std::vector<const ObservationFeatures*>& batch) override;
  StatusOr<LearnReport> Learn(std::vector<Episode> episodes, const LearnContext& context) override;
  int RememberedEpisodes() const override { return wm_.replay_episodes; }
  Status Remember(std::vector<Episode> episodes) override;
  StatusOr<std::string> WeightsBytes() override;
  Status LoadWeights(const std::string& bytes) override;
  std::string WeightsChecksum() override;
  Status Broadcast(GradientAllReducer& group) override;
  Status SaveCheckpoint(const std::string& path, const RunState& run) override;
  StatusOr<RunState> LoadCheckpoint(const std::string& path, bool resume) override;
  Status UseDevice(const std::string& device, int64_t local_index) override;

  GnnPolicy& controller() { return controller_; }
  WorldModel& world() { return world_; }
  /// Real episodes the world model trains on (each state with its chosen rewrite only).
  size_t replay_size() const { return replay_.size(); }

 private:
  WorldModelAgent() = default;
  /// Adds a real episode (with observations) to the replay, dropping the oldest beyond
  /// world_model.replay_episodes.
  void Keep(const Episode& episode);
  /// Trains the world model: model_updates minibatches from the replay.
  StatusOr<std::pair<double, double>> TrainWorld(const LearnContext& ctx);
  /// Imagined episodes, rewarded by the model, and their mean return.
  StatusOr<std::vector<Episode>> Imagine(const LearnContext& ctx, double* mean_return);
  template <typename Fn>
  auto OnCpu(Fn&& fn) -> decltype(fn());

  GnnPolicy controller_{nullptr};
  WorldModel world_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_, world_optimizer_;  // null: acting only
  PpoSection ppo_;
  WorldModelSection wm_;
  bool sparse_ = false;  // the real reward is the sparse measured one
  torch::Device device_{torch::kCPU};
  /// The replay: per real episode, its states with their chosen rewrites (what the model trains
  /// on) and the episode without observations (Compact: what imagination branches from).
  struct Stored {
    Episode reduced, actions;
  };
  std::deque<Stored> replay_;
  int64_t imagined_episodes_ = 0, imagined_steps_ = 0, world_updates_ = 0;
};

}  // namespace rewire
