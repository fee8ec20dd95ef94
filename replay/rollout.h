#pragma once
// Rollout storage for PPO (CleanRL's buffers, per episode): the observations as the GNN sees
// them (env/features.h), the actions taken with their log-probabilities and value estimates,
// and the rewards; GAE over them; shuffled minibatches. No LibTorch here.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "env/features.h"

namespace rewire {

/// One environment step as the acting policy saw it.
struct RolloutStep {
  ObservationFeatures observation;
  int32_t action = 0;  // index into the observation's actions (No-Op = num_actions() - 1)
  float logprob = 0;   // log pi(action | observation) under the acting policy
  float value = 0;     // V(observation) under the acting policy
  float reward = 0;
  bool done = false;  // the episode ended after this step (No-Op, horizon, no candidates)
};

/// One finished episode.
struct Episode {
  std::string model;           // label of the model it ran on
  int64_t policy_version = 0;  // version of the policy that acted
  double initial_cost_ms = 0;
  double final_cost_ms = 0;
  double best_cost_ms = 0;         // cheapest graph seen during the episode
  std::vector<std::string> rules;  // rewrites taken, in order
  std::vector<RolloutStep> steps;
  double episodic_return() const;
  double speedup() const { return final_cost_ms > 0 ? initial_cost_ms / final_cost_ms : 0.0; }
};

/// The mean of `values`; NaN when empty.
double MeanOf(const std::vector<double>& values);

/// Generalised advantage estimation (Schulman et al.), in CleanRL's form over a flat sequence:
/// `dones[t]` says the episode ended after step t (so nothing is bootstrapped past it) and
/// `last_value` is V of the state after the final step (used only when that step is not done).
/// Fills `advantages` and `returns` (= advantages + values). Sizes of rewards, values and dones
/// must be equal.
void ComputeGae(const std::vector<float>& rewards, const std::vector<float>& values,
                const std::vector<uint8_t>& dones, float last_value, double gamma, double lambda,
                std::vector<float>* advantages, std::vector<float>* returns);

/// The episodes of one PPO update, flattened into steps.
class RolloutBuffer {
 public:
  void Add(Episode episode);
  void Clear();
  size_t num_steps() const { return steps_.size(); }
  size_t num_episodes() const { return episodes_.size(); }
  const std::vector<Episode>& episodes() const { return episodes_; }
  /// Step i of the flattened buffer.
  const RolloutStep& step(size_t i) const;
  /// Runs GAE over every stored step (every episode ends done).
  void ComputeAdvantages(double gamma, double lambda);
  const std::vector<float>& advantages() const { return advantages_; }
  const std::vector<float>& returns() const { return returns_; }
  /// A permutation of the step indices cut into minibatches of `size` (the last may be
  /// smaller), as CleanRL's shuffled `b_inds`.
  std::vector<std::vector<size_t>> Minibatches(size_t size, std::mt19937_64& rng) const;
  /// Heap bytes held by the observations.
  size_t bytes() const;

 private:
  std::vector<Episode> episodes_;
  std::vector<std::pair<size_t, size_t>> steps_;  // (episode, step)
  std::vector<float> advantages_, returns_;
};

}  // namespace rewire
