#pragma once
// One PPO update (LibTorch; include only from learner/*.cc and tests): GAE over a buffer of
// finished episodes, then epochs of shuffled minibatches with the clipped objective, value loss
// and entropy bonus, gradients all-reduced over the data-parallel group, global-norm clip,
// target-KL early stop. The ppo-gnn agent's Learn (learner/ppo_agent.cc) calls it once per
// update, on the episodes its learner rank collected or received from env actors.

#include <random>
#include <vector>

#include "learner/config.h"
#include "learner/data_parallel.h"
#include "learner/policy.h"
#include "replay/rollout.h"

namespace rewire {

/// What an update did (CleanRL's loss metrics, from the last minibatch where CleanRL logs them).
struct UpdateStats {
  double policy_loss = 0;
  double value_loss = 0;
  double entropy = 0;
  double old_approx_kl = 0;
  double approx_kl = 0;           // mean over ranks
  double clipfrac = 0;            // mean over minibatches
  double explained_variance = 0;  // of the acting values against the returns (NaN if constant)
  int epochs = 0;                 // epochs run (fewer than update_epochs after a target-KL stop)
};

/// Runs one PPO update of `policy` on `buffer` (whose advantages it computes). Every rank of
/// `dp` must call it with the same settings (see learner/data_parallel.h); `rng` shuffles the
/// minibatches. Errors: a collective failed.
StatusOr<UpdateStats> UpdatePolicy(GnnPolicy& policy, torch::optim::Optimizer& optimizer,
                                   RolloutBuffer& buffer, const PpoSection& ppo,
                                   GradientAllReducer& dp, std::mt19937_64& rng);

}  // namespace rewire
