#pragma once
// The ppo-gnn agent: PPO (learner/ppo.h) over the GNN policy (learner/policy.h), reading
// gnn-features observations with the GNN's number of layers as hops. Its checkpoints are the
// policy's (learner/checkpoint.cc: weights, Adam's state, the run's position). LibTorch: include
// only from learner/*.cc and tests; others make it by name (Agents().Create("ppo-gnn", ...)).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "learner/agent.h"
#include "learner/config.h"
#include "learner/policy.h"

namespace rewire {

inline constexpr const char* kPpoGnnAgent = "ppo-gnn";

class PpoGnnAgent : public Agent {
 public:
  /// A fresh policy of config.gnn's shape, its weights drawn from `seed`, with Adam as
  /// config.ppo sets it.
  static StatusOr<std::unique_ptr<PpoGnnAgent>> Create(const TrainConfig& config, uint64_t seed);
  /// The policy in checkpoint `path`, of the shape it was saved with, for acting only (Learn is
  /// an error). Errors: LoadCheckpoint's.
  static StatusOr<std::unique_ptr<PpoGnnAgent>> Load(const std::string& path);
  /// An acting agent over `policy` itself (shared, not copied): what tests and benchmarks that
  /// hold a policy play episodes with.
  static std::unique_ptr<PpoGnnAgent> ForPolicy(GnnPolicy policy);

  std::string Name() const override { return kPpoGnnAgent; }
  ObservationFormat observation_format() const override;
  StatusOr<std::vector<ActionScores>> Score(
      const std::vector<const ObservationFeatures*>& batch) override;
  StatusOr<LearnReport> Learn(std::vector<Episode> episodes, const LearnContext& context) override;
  StatusOr<std::string> WeightsBytes() override;
  Status LoadWeights(const std::string& bytes) override;
  std::string WeightsChecksum() override;
  Status Broadcast(GradientAllReducer& group) override;
  Status SaveCheckpoint(const std::string& path, const RunState& run) override;
  StatusOr<RunState> LoadCheckpoint(const std::string& path, bool resume) override;
  Status UseDevice(const std::string& device, int64_t local_index) override;

  GnnPolicy& policy() { return policy_; }

 private:
  PpoGnnAgent() = default;

  GnnPolicy policy_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;  // null: loaded for acting only
  PpoSection ppo_;
  torch::Device device_{torch::kCPU};
};

/// The policy's scores of a batch of observations: what PPO's agents act with.
StatusOr<std::vector<ActionScores>> ScoreWithPolicy(
    GnnPolicy& policy, const std::vector<const ObservationFeatures*>& batch);

struct UpdateStats;  // learner/ppo.h
/// An update's PPO losses as metrics under `prefix` (CleanRL's names: "losses/value_loss", ...).
void AppendPpoMetrics(const UpdateStats& stats, const std::string& prefix,
                      std::vector<std::pair<std::string, double>>& metrics);

/// Sets `optimizer`'s rate for update ctx.update: ppo.learning_rate, annealed linearly to 0 over
/// max_updates when ppo.anneal_lr (CleanRL); returns it.
double SetPpoLearningRate(torch::optim::Optimizer& optimizer, const PpoSection& ppo,
                          const LearnContext& ctx);

/// Loads weight bytes (PolicyWeightsBytes) into `policy`, which lives on `device`: bytes load
/// onto the CPU, so the policy goes there and back.
Status LoadPolicyWeightsOn(GnnPolicy& policy, const torch::Device& device,
                           const std::string& bytes);

/// FNV-1a over the bytes of every parameter: equal on every rank when the weights are.
std::string ParametersChecksum(const std::vector<torch::Tensor>& params);

/// A policy checkpoint's metadata for the run's position `run` and a policy of `shape`, and back.
CheckpointMeta CheckpointMetaOf(const RunState& run, const GnnShape& shape);
RunState RunStateOf(const CheckpointMeta& meta);

/// The policy's shape as a config's [gnn] section gives it.
GnnShape ShapeOf(const GnnSection& gnn);

/// `name` ("cpu", "cuda", "cuda:N") resolved on this machine; plain "cuda" with several processes
/// per machine takes GPU `index` modulo the GPUs.
StatusOr<torch::Device> PickDevice(const std::string& name, int64_t index);

}  // namespace rewire
