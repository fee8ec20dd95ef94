#pragma once
// The world model of the world-model agent (learner/world_model_agent.h; docs/rl.md, "The
// world-model agent"). LibTorch: include only from learner/*.cc and tests.
//
//   encoder    the GNN of the policy (learner/policy.h), its own weights: z = the mean node
//              embedding of a graph; a candidate's successor z' comes exactly from its region
//   potential  g(z, c) -> the return from the episode's start to this state, in percent of the
//              episode's first runtime; c = the graph's cost under env.cost relative to the
//              episode's first graph. g starts as env.cost's own return, 100 (1 - c), times a
//              learned weight (from 1), plus a learned correction: the analytic prediction is the
//              prior the measured return is learned against.
//              The reward of a step is g(z', c') - g(z, c): imagined returns telescope, so the
//              return of an imagined path is the model's estimate of its last graph alone, and the
//              sparse measured reward - one label per episode, its final graph - trains it.
//   dynamics   (z, action) -> z' as z + MLP(z, a); the action is the rewrite's bag of removed and
//              added operator types. It shapes the encoder (the self-predictive loss) and is what
//              the latent dream of the quality figures rolls forward; the agent's imagination
//              does not need it, because the next graph is exact and cheap (the real rewriter).
//
// Termination needs no head: an episode ends on the No-Op, at the horizon or when the matcher
// finds no candidate, all of which the real environment knows in imagination.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "env/features.h"
#include "learner/policy.h"
#include "replay/rollout.h"

namespace rewire {

/// Inputs of the action embedding: per operator type, how many nodes the rewrite removes and adds.
inline constexpr int kActionFeatures = 2 * kNumOpTypes;

/// A batch of transitions: states, the action taken in each, and what they encode to.
struct TransitionLatents {
  torch::Tensor z, z_next;        // [B, hidden]: the state and its successor (the No-Op's is z)
  torch::Tensor cost, cost_next;  // [B]: cost relative to the episode's first graph
  torch::Tensor action;           // [B, kActionFeatures]
  torch::Tensor moved;            // [B] 1 for a rewrite, 0 for the No-Op
};

class WorldModelImpl : public torch::nn::Module {
 public:
  explicit WorldModelImpl(GnnShape shape);

  /// Encodes states and the successor of each one's action (actions[i] indexes observations[i]'s
  /// actions; the No-Op's successor is the state itself). Only the chosen candidate is encoded.
  TransitionLatents Encode(const std::vector<const ObservationFeatures*>& observations,
                           const std::vector<int32_t>& actions);
  /// g(z, c): [B] returns-to-here in percent of the episode's first runtime.
  torch::Tensor Potential(const torch::Tensor& z, const torch::Tensor& cost);
  /// The predicted successor latent.
  torch::Tensor Dynamics(const torch::Tensor& z, const torch::Tensor& action);

  const GnnShape& shape() const { return shape_; }
  torch::Device device() const;

 private:
  GnnShape shape_;
  GnnPolicy encoder_{nullptr};
  torch::nn::Sequential potential_{nullptr}, dynamics_{nullptr};
  torch::Tensor prior_;  // the weight of env.cost's return in the potential (from 1)
};
TORCH_MODULE(WorldModel);

/// What the model is trained on: one step of a real episode, with what is known of the return
/// before and after it (NaN where unknown: the sparse reward labels only an episode's first state
/// and its final graph).
struct LabelledStep {
  const ObservationFeatures* observation = nullptr;
  int32_t action = 0;
  float label_before = 0, label_after = 0;
};

/// The labelled steps of `episode`: with a dense reward every state's return-to-here is known;
/// with the sparse one only the first state's (0) and the final graph's (the episode's return).
/// Steps without an observation are skipped.
std::vector<LabelledStep> LabelSteps(const Episode& episode, bool sparse);

/// The losses of one batch: the potential's (Huber on labels / kValueScale) and the dynamics'
/// (squared error relative to the successor latents' mean square, rewrites only).
struct WorldModelLoss {
  torch::Tensor potential, dynamics;
};
WorldModelLoss ComputeWorldModelLoss(WorldModel& model, const std::vector<LabelledStep>& batch);

/// How good the model is on episodes it has not trained on (docs/rl.md, "The world model's
/// quality"); NaN where the episodes carry no such label.
struct WorldModelQuality {
  double reward_error = 0;  // mean |predicted - real| one-step reward, percentage points (dense)
  double return_error = 0;  // mean |predicted - real| whole-episode return
  double latent_error = 0;  // dynamics: squared error relative to the successors' mean square
  /// Mean |imagined - real| return over windows of k = 1, 4, 16 steps (dense): on the exact
  /// graphs with the model's rewards (what the agent imagines) and in the latent dream (the
  /// dynamics rolled forward k steps from the window's first real state, RLFlow's way).
  double drift_exact[3] = {0, 0, 0};
  double drift_latent[3] = {0, 0, 0};
  int64_t steps = 0;  // steps evaluated
};
inline constexpr int kDriftSteps[3] = {1, 4, 16};
WorldModelQuality EvaluateWorldModel(WorldModel& model, const std::vector<const Episode*>& episodes,
                                     bool sparse);

/// The model's reward of each step of `episode` (g(z', c') - g(z, c); 0 for the No-Op).
std::vector<float> PredictRewards(WorldModel& model, const Episode& episode);

}  // namespace rewire
